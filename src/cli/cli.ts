import { commandList, commandLoader } from './commands.js';
import { skiffVersion } from './version.js';

/** The `skiff` command: dispatches to one subcommand per Kafka tool name (commands.ts). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

function usage(io: CliIo): void {
  io.out('Usage: skiff <command> [options]');
  io.out('');
  io.out('Commands:');
  for (const { name, summary } of commandList()) io.out(`  ${name.padEnd(22)}${summary}`);
  io.out('');
  io.out('Run `skiff <command> --help` for the options of one command, `skiff --version` for the version.');
}

/**
 * `--version` is an option of every subcommand, as of every Kafka tool (CommandDefaultOptions; and
 * kafka.Kafka's `args.contains("--version")` for the broker): anywhere in the arguments it prints
 * the version and exits 0 — checked here, before the subcommand's code is loaded — unless --help is
 * asked for too, which wins (CommandLineUtils.maybePrintHelpOrVersion); then it is dropped and
 * the subcommand prints its help.
 */
const VERSION_FLAG = '--version';

function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    usage(io);
    return 0;
  }
  if (name === VERSION_FLAG) {
    io.out(skiffVersion());
    return 0;
  }
  const load = commandLoader(name);
  if (!load) {
    io.err(`skiff: unknown command '${name}' (try: skiff --help)`);
    return 2;
  }
  let args = rest;
  if (rest.includes(VERSION_FLAG)) {
    if (!wantsHelp(rest)) {
      io.out(skiffVersion());
      return 0;
    }
    args = rest.filter((a) => a !== VERSION_FLAG);
  }
  try {
    const run = await load();
    return await run(args, io);
  } catch (e) {
    io.err(`skiff ${name}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}
