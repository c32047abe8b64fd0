// Package interop tests protomcp against the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in ts/package.json and ts/package-lock.json) and the
// schema checkers of real clients.
//
// The tests run the weather example both ways: the SDK's Client (ts/client.mjs) against the Go
// server, and the generated Go client against an SDK McpServer (ts/server.mjs) serving the
// same tools. They need Node.js 20 or newer and npm on PATH; the first run installs the npm
// packages into ts/node_modules with npm ci.
//
// Tasks (spec 2025-11-25, Tasks) are tested both ways too: the SDK's experimental tasks client
// (ts/tasks-client.mjs: callToolStream, getTask, getTaskResult, listTasks, cancelTask) drives
// the weather example's task tool on the Go server, and the Go client drives the task tools of
// the everything server and of the SDK's interactive task example.
//
// The schema tests check what real clients make of the generated schemas: MCP Inspector's CLI
// (@modelcontextprotocol/inspector, `tools/list --strict`) on the weather, contract and
// conformance servers, and Ajv in strict mode as draft-07 (ts/schemas.mjs) on every schema and
// on every request and result of the typed clients' calls. package.json overrides vite (a
// dependency of the Inspector's web client) to 8.3.8: vite 8.4.0 names an optional dependency
// that the npm registry does not have, which leaves package-lock.json without it and makes npm
// ci refuse the lock. The Inspector asks for Node 22.19; its CLI runs on Node 20 as well.
//
//	go test -race ./interop/
package interop
