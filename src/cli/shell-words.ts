/**
 * Splits a command line into words the way a POSIX shell does for plain words and quotes, with
 * no expansion of any kind (no variables, globs, `~`, pipes or redirections: the command is run
 * directly, without a shell).
 *
 * - Whitespace separates words.
 * - `'...'` keeps everything inside literally.
 * - `"..."` keeps everything inside; a backslash escapes only `"`, `\`, `$` and `` ` ``.
 * - Outside quotes, a backslash makes the next character literal.
 * - `''` or `""` alone is an empty word.
 *
 * @throws {ShellWordsError} on an unterminated quote or a trailing backslash.
 */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i++;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end === -1) throw new ShellWordsError(`unterminated ' quote at column ${i + 1}`);
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      let closed = false;
      while (i < line.length) {
        const d = line[i]!;
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) {
          word += line[i + 1];
          i += 2;
        } else {
          word += d;
          i++;
        }
      }
      if (!closed) throw new ShellWordsError('unterminated " quote');
      inWord = true;
    } else if (c === "\\") {
      if (i + 1 >= line.length) throw new ShellWordsError("trailing backslash");
      word += line[i + 1];
      inWord = true;
      i += 2;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** A command line that cannot be split (a usage error). */
export class ShellWordsError extends Error {
  override name = "ShellWordsError" as const;
}
