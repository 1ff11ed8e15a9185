import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// docs/architecture.md's checkable claims about the message pipeline (issue 27): its table names
// files that exist, and the order it states is the order `Wire.open` builds (the one pipe call).

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const doc = readFileSync(resolve(root, "docs/architecture.md"), "utf8");
const section = doc.slice(doc.indexOf("## The message pipeline"), doc.indexOf("## The path of one call"));
const rows = section.split("\n").filter((line) => /^\| \d \|/.test(line));

describe("docs/architecture.md: the message pipeline", () => {
  it("every layer's file in the table exists", () => {
    expect(rows.length).toBeGreaterThanOrEqual(7);
    for (const row of rows) {
      const file = /`(src\/[^`]+\.ts)`/.exec(row)?.[1];
      expect(file, row).toBeDefined();
      expect(existsSync(resolve(root, file!)), file).toBe(true);
    }
  });

  it("the order it states (tasks, listens, correlation, above the adapter's layers) is Wire.open's one pipe call", () => {
    const wire = readFileSync(resolve(root, "src/wire/wire.ts"), "utf8");
    const open = wire.slice(wire.indexOf("static open<"), wire.indexOf("private constructor("));
    const order = ["adapterLayers(adapter)", "new TaskTracker(", "new ListenTracker(", "new Wire("].map((marker) => open.indexOf(marker));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const numbered = (name: string) => Number(rows.find((row) => row.includes(name))?.slice(2, 3));
    expect(numbered("tasks") < numbered("listens") && numbered("listens") < numbered("correlation")).toBe(true);
    expect(numbered("stdio write queue") < numbered("tasks")).toBe(true);
  });
});
