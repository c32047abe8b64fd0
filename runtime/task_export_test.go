package runtime

// What the external tests of tasks observe of a running task, without waiting on time.

// TaskResultWaiters returns how many tasks/result requests wait on task id, which s runs:
// those that have looked for its input requests at least once. It is 0 when s does not run
// the task.
func TaskResultWaiters(s *Server, id string) int {
	rt := s.runningTaskOf(id)
	if rt == nil {
		return 0
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.waiters)
}
