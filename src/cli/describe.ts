import type { Message } from "../wire/messages.js";

/** `text` cut to at most `max` characters, with an ellipsis when cut; control characters shown escaped. */
export function truncate(text: string, max: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
  const clean = text.replace(/[\u0000-\u001f\u007f]/g, (c) => (c === "\t" ? " " : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`));
  return clean.length <= max ? clean : `${clean.slice(0, Math.max(0, max - 1))}…`;
}

/** A JSON value in at most `max` characters. */
export function brief(value: unknown, max = 80): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return truncate(text, max);
}

/** `#2`-style label for a request id (strings quoted). */
export function idLabel(id: unknown): string {
  return typeof id === "number" ? `#${id}` : `#${JSON.stringify(id)}`;
}

/** A short label for the message an HTTP body carried: `tools/call #2`, `notifications/cancelled #2`, `response #2`. */
export function describeRequest(message: Message): string {
  if (typeof message.method === "string") {
    if (message.method === "notifications/cancelled") {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      return `notifications/cancelled ${idLabel(requestId)}`;
    }
    return message.id === undefined ? message.method : `${message.method} ${idLabel(message.id)}`;
  }
  return `response ${idLabel(message.id)}`;
}

/** One line for the timeline: what the message is, in words a bot author reads. */
export function describeMessage(message: Message): string {
  const params = (message.params ?? {}) as Record<string, unknown>;
  const method = message.method;
  if (method === undefined) {
    if (message.error !== undefined) {
      const error = message.error as { code?: unknown; message?: unknown };
      return `error ${idLabel(message.id)}: ${String(error.code)} ${truncate(String(error.message ?? ""), 80)}`;
    }
    return `result ${idLabel(message.id)}: ${brief(summarizeResult(message.result), 90)}`;
  }
  switch (method) {
    case "notifications/cancelled":
      return `notifications/cancelled ${idLabel(params.requestId)}${typeof params.reason === "string" ? ` "${truncate(params.reason, 70)}"` : ""}`;
    case "notifications/progress": {
      const total = typeof params.total === "number" ? `/${params.total}` : "";
      const text = typeof params.message === "string" ? ` "${truncate(params.message, 50)}"` : "";
      return `notifications/progress token ${brief(params.progressToken, 40)}: ${String(params.progress)}${total}${text}`;
    }
    case "tools/call": {
      const meta = params._meta as { progressToken?: unknown } | undefined;
      const token = meta?.progressToken === undefined ? "" : ` (progressToken ${brief(meta.progressToken, 30)})`;
      return `tools/call ${idLabel(message.id)} ${String(params.name)} ${brief(params.arguments ?? {}, 60)}${token}`;
    }
    case "initialize":
      return `initialize ${idLabel(message.id)} (protocolVersion ${String(params.protocolVersion)})`;
  }
  return message.id === undefined || message.id === null ? method : `${method} ${idLabel(message.id)}`;
}

/** A compact view of a result: tool text content, or the result's keys. */
function summarizeResult(result: unknown): unknown {
  if (typeof result !== "object" || result === null) return result;
  const content = (result as { content?: unknown }).content;
  if (Array.isArray(content)) {
    const first = content[0] as { type?: unknown; text?: unknown } | undefined;
    if (first?.type === "text" && typeof first.text === "string") {
      return { isError: (result as { isError?: unknown }).isError ?? false, text: first.text };
    }
  }
  const keys = Object.keys(result);
  if (keys.includes("tools")) return { tools: ((result as { tools: unknown[] }).tools ?? []).length };
  if (keys.includes("protocolVersion")) return { protocolVersion: (result as { protocolVersion: unknown }).protocolVersion };
  return Object.fromEntries(keys.slice(0, 4).map((key) => [key, "…"]));
}

/**
 * A target URL as the report shows it: a password in the URL and the values of its query
 * parameters (where API keys often travel) are replaced by `***`, since a probe report is
 * pasted into issues and CI logs. The host, path and parameter names stay.
 */
export function displayUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.password !== "") parsed.password = "***";
  const names = [...new Set(parsed.searchParams.keys())];
  for (const name of names) parsed.searchParams.set(name, "***");
  return parsed.href.replaceAll("%2A%2A%2A", "***");
}
