// Timing bounds shared by the tests that run real processes and sockets. Tests assert orders,
// counts and bounds, never absolute speeds: these are the slack a loaded CI machine (2 cores,
// several Node versions in a row) needs on top of the deadline under test.

/** How late past its deadline a real-time event may be observed, ms. */
export const SLACK_MS = 500;
