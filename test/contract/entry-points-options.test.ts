// The entry-point contract (issue 28, item 3), its option rows: each client-wide option, on every
// entry point that runs on Node 20, changes what happens (the drivers: drivers.ts; the table:
// contract.suite.ts; the behaviour rows: entry-points.test.ts).
import { entryPointContract } from "./contract.suite.js";
import { drivers } from "./drivers.js";

entryPointContract(drivers, "options");
