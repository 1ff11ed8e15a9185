// The relative links of the project's Markdown pages (README.md, CHANGELOG.md, docs/): where each
// points, and whether its #anchor names a heading of the page it points to (GitHub's slugs).
import { posix } from "node:path";

/** One relative link: the page it is on, the file it points to (from the root), its #anchor if any. */
export interface PageLink {
  readonly page: string;
  readonly href: string;
  readonly target: string;
  readonly anchor: string | undefined;
}

/** The relative links of a page (`page` from the root, `text` its Markdown); fenced code is skipped. */
export function relativeLinks(page: string, text: string): PageLink[] {
  const prose = text.replace(/```[\s\S]*?```/g, "");
  const links: PageLink[] = [];
  for (const match of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    const href = match[1]!;
    if (/^[a-z][a-z+.-]*:/i.test(href)) continue; // https:, mailto:
    const [path, anchor] = href.split("#", 2) as [string, string | undefined];
    const target = path === "" ? page : posix.normalize(posix.join(posix.dirname(page), path));
    links.push({ page, href, target, anchor: anchor === "" ? undefined : anchor });
  }
  return links;
}

/** The anchors GitHub gives a Markdown page's headings (lowercase, punctuation dropped, spaces to hyphens, repeats numbered). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of text.replace(/```[\s\S]*?```/g, "").matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = match[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}
