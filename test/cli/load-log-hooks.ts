/** The module hook of load-log.ts: appends each module's URL to SKIFF_LOAD_LOG as it is loaded. */
import * as fs from 'node:fs';

type Next = (url: string, context: unknown) => Promise<unknown>;

export async function load(url: string, context: unknown, next: Next): Promise<unknown> {
  const log = process.env.SKIFF_LOAD_LOG;
  if (log !== undefined) fs.appendFileSync(log, `${url}\n`);
  return next(url, context);
}
