// A node process that does nothing but measure its own event-loop delay: the same-run baseline of
// what the machine's load alone does to an event loop (a 2-core box shared with API servers and
// other work deschedules every process now and then).
//
//   node idle-loop-child.js <port>     GET /reset starts a new window; GET /state answers it.
import { serveLoopState } from './loop-state-server.js';

serveLoopState(Number(process.argv[2]));
