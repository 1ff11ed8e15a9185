/** Where a command of the `mcp-cancellable` CLI writes (the process's streams, or a test's buffers). */
export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}
