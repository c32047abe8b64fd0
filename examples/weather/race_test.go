//go:build race

package weather_test

// raceEnabled reports whether the tests run under the race detector, which slows each call
// about fivefold.
const raceEnabled = true
