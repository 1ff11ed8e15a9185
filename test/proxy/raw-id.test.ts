import { describe, expect, it } from "vitest";
import { idOfAnswer, replaceId } from "../../src/cli/proxy/raw-id.js";

// A large answer relayed from the server's own bytes with only its id changed.
const rewrite = (text: string, from: string | number, to: string | number): string | undefined =>
  replaceId(Buffer.from(text, "utf8"), from, to)
    ?.map((piece) => piece.toString("utf8"))
    .join("");

describe("replaceId", () => {
  it("the id as the last member (the MCP SDKs), and as a leading member (the Python SDK), with spaces", () => {
    const cases: Array<[string, number | string, number | string]> = [
      ['{"result":{"content":[{"type":"text","text":"a \\"id\\":7}"}]},"jsonrpc":"2.0","id":7}', 7, "client-1"],
      ['{"jsonrpc":"2.0","id":7,"result":{"id":7,"nested":{"id":7}}}', 7, 99],
      ['{ "jsonrpc" : "2.0" , "id" : "up-7" , "result" : {} }', "up-7", 3],
      ['{"result":{},"jsonrpc":"2.0","id":12}  ', 12, "é"],
    ];
    for (const [text, from, to] of cases) {
      const out = rewrite(text, from, to);
      expect(out, text).toBeDefined();
      expect(JSON.parse(out!)).toEqual({ ...JSON.parse(text), id: to });
    }
  });

  it("undefined (serialise instead) when the id is not where it is looked for, or not written as expected", () => {
    expect(rewrite('{"result":{"a":[1,2]},"id":7,"jsonrpc":"2.0"}', 7, 1)).toBeUndefined(); // after a nested value, not last
    expect(rewrite('{"jsonrpc":"2.0","id":7.0,"result":{}}', 7, 1)).toBeUndefined(); // not written as JSON.stringify writes 7
    expect(rewrite('{"result":{"x":"\\"id\\":7"},"jsonrpc":"2.0","i\\u0064":7}', 7, 1)).toBeUndefined();
    expect(rewrite('{"result":{},"id":8}', 7, 1)).toBeUndefined();
  });

  it("a line in pieces (as a long line is read): the id found across a piece boundary; the pieces are slices, not copies", () => {
    const text = `{"result":{"text":"${"q".repeat(5_000)}"},"jsonrpc":"2.0","id":1234}`;
    const bytes = Buffer.from(text, "utf8");
    for (const cut of [text.length - 3, text.length - 8, 10, 2_500]) {
      const pieces = [bytes.subarray(0, cut), bytes.subarray(cut)];
      const out = replaceId(pieces, 1234, "c-9")!;
      expect(JSON.parse(Buffer.concat(out).toString("utf8"))).toEqual({ ...JSON.parse(text), id: "c-9" });
      expect(out.some((piece) => piece.buffer === bytes.buffer)).toBe(true);
    }
  });

  it("idOfAnswer: the id of an answer whose id is its last member; undefined for a request, a notification, or an id elsewhere", () => {
    const of = (text: string) => idOfAnswer([Buffer.from(text.slice(0, 7)), Buffer.from(text.slice(7))]);
    expect(of('{"result":{"content":[]},"jsonrpc":"2.0","id":12}')).toBe(12);
    expect(of('{"jsonrpc":"2.0","error":{"code":-1,"message":"x"},"id":"a-1"}')).toBe("a-1");
    expect(of('{"method":"sampling/createMessage","params":{},"jsonrpc":"2.0","id":12}')).toBeUndefined();
    expect(of('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}')).toBeUndefined();
    expect(of('{"jsonrpc":"2.0","id":12,"result":{}}')).toBeUndefined();
    expect(of('{"params":{"x":1},"result":{},"id":12}')).toBeUndefined();
  });
});
