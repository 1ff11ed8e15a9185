// Types of scripts/size-table.mjs (a plain Node script, run by `npm run size:table`; imported by test/package/pack.test.ts).
export interface PackInfo {
  size: number;
  unpackedSize: number;
  files: Array<{ path: string; size: number }>;
}
export declare const START: string;
export declare const END: string;
export declare const TOLERANCE: number;
export declare function sizeRows(info: PackInfo): Array<{ label: string; bytes: number }>;
export declare function kB(bytes: number): string;
export declare function renderTable(info: PackInfo, version: string): string;
export declare function documentedRows(markdown: string): Array<{ label: string; kB: number }> | undefined;
export declare function staleRows(markdown: string, info: PackInfo): string[];
