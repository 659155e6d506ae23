/**
 * A process whose parent died shuts down: a `skiff up` started by npx or a test harness, or a
 * `skiff broker` started by a script, must not outlive whoever started it (a killed `npx skiff up`
 * used to leave the launcher and every broker running with no parent).
 *
 * Linux has no "parent died" event a Node process can wait on (prctl's PDEATHSIG is not reachable
 * from JavaScript), so the parent's pid is looked at every `intervalMs`: once the process has been
 * re-parented (to init or a subreaper), its parent is gone. A process started by init itself
 * (ppid 1 from the start: systemd, a container's entry point) has no parent to watch.
 *
 * A `sh -c` parent is plumbing, not the one who asked: npx and `npm run` start a bin through
 * `sh -c`, which lives as long as its child, so a SIGKILLed npx leaves that shell (re-parented)
 * and its child running. Such a shell's own parent is watched too, through the shell's ppid (on
 * Linux, from /proc): when that changes, whoever started the shell is gone.
 */
import { readFileSync } from 'node:fs';

/** How often the parent's pid is looked at: a parent's death is noticed within about this. */
export const PARENT_WATCH_INTERVAL_MS = 500;

/** How many `sh -c` wrappers in a row are looked through. */
const MAX_WRAPPERS = 3;

/** The parent pid of `pid` (field 4 of /proc/<pid>/stat, after the parenthesised command), or null. */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null;
  }
}

/** A non-interactive shell running one command string: `sh -c '...'` (also bash, dash, zsh). */
function isShellWrapper(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const exe = (argv[0] ?? '').split('/').pop() ?? '';
    return /^(?:sh|dash|bash|zsh)$/.test(exe) && argv.includes('-c');
  } catch {
    return false;
  }
}

/** Each watched shell wrapper with the parent it had when the watch began. */
function wrapperChain(parent: number): { pid: number; parent: number }[] {
  const chain: { pid: number; parent: number }[] = [];
  let pid = parent;
  while (chain.length < MAX_WRAPPERS && isShellWrapper(pid)) {
    const up = parentOf(pid);
    if (up === null || up <= 1) break;
    chain.push({ pid, parent: up });
    pid = up;
  }
  return chain;
}

/**
 * Calls `onParentGone` once, when this process's parent (or the starter of a `sh -c` parent) has
 * died. Returns a function that stops the watch. The timer never keeps the process alive.
 */
export function watchParent(
  onParentGone: (formerParentPid: number) => void,
  intervalMs = PARENT_WATCH_INTERVAL_MS,
): () => void {
  const parent = process.ppid;
  if (parent <= 1) return () => {};
  const wrappers = wrapperChain(parent);
  const timer = setInterval(() => {
    let gone: number | null = process.ppid === parent ? null : parent;
    for (const w of wrappers) if (gone === null && parentOf(w.pid) !== w.parent) gone = w.parent;
    if (gone === null) return;
    clearInterval(timer);
    onParentGone(gone);
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
