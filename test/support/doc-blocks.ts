/**
 * The fenced code blocks of a Markdown guide, as the docs tests run them: ```lang [name], the
 * name (the info string's second word) telling a test what a block is for; and a documented
 * output line as a pattern, `…` standing for what differs from run to run and a run of spaces
 * for any column padding.
 */

export interface Block {
  readonly lang: string;
  readonly name: string | undefined;
  readonly body: string;
}

/** The fenced blocks of `markdown`, in order; a block indented in a list item loses that indent. */
export function fencedBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^( *)```(\w+)(?: (\S+))?\n([\s\S]*?)^ *```$/gm)].map((m) => ({
    lang: m[2]!,
    name: m[3],
    body: m[4]!.replace(new RegExp(`^ {0,${m[1]!.length}}`, 'gm'), ''),
  }));
}

/** A documented output line as a pattern: `…` any text, a run of spaces any padding. */
export function linePattern(line: string): RegExp {
  const parts = line.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ +/g, ' +'));
  return new RegExp(`^${parts.join('.*?')}[ \\t]*$`, 'm');
}
