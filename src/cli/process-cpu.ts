import { readdirSync, readFileSync } from "node:fs";

/** Linux's USER_HZ: `/proc/<pid>/stat` counts CPU time in these ticks per second (100 on every mainstream build). */
export const CLOCK_TICKS_PER_SECOND = 100;

/**
 * The CPU time, in ms, used so far by every process in the process group `pgid` (the stdio
 * server and what it started: the probe spawns it as a group leader), read from `/proc`: user
 * plus system time of each member, plus the time of the children each member already reaped.
 * Resolution: 10 ms. `undefined` where there is no `/proc` (not Linux) or the group is gone.
 */
export function processGroupCpuMs(pgid: number): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return undefined;
  }
  let ticks = 0;
  let found = false;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // The command name (field 2) may hold spaces and parentheses: parse after its last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): pgrp is field 5, utime..cstime are fields 14..17.
    if (Number(fields[2]) !== pgid) continue;
    found = true;
    for (const index of [11, 12, 13, 14]) ticks += Number(fields[index]) || 0;
  }
  return found ? (ticks * 1_000) / CLOCK_TICKS_PER_SECOND : undefined;
}
