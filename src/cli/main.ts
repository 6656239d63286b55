/** The `svc` command line: dispatches to one module per command group. */
import { parseArgs, parsePort } from './args.js';
import { CliError, reportCliError } from './exit-codes.js';
import { isSourceCheckout } from './package-root.js';
import { resolveHome, type Flavor } from '../keys/home.js';

const USAGE = `svc — a self-hosted mail service for AI agents

Usage:
  svc serve [--init] [--port N] [--home DIR] [--flavor development|production]
            [--local-edge [--smtp-port N] [--edge-dns IP[:PORT],...] [--relay-port N]]
            [--dns IP[:PORT],...]
  svc service install|status|uninstall [--home DIR] [--flavor F] [--port N] [--json]
  svc oauth clients|revoke <grant_id>|purge [--home DIR] [--flavor F] [--json]
  svc edge [--data DIR] [--host H] [--smtp-port N] [--api-port N] [--hostname NAME]
`;

function flavorOf(value: string | boolean | undefined): Flavor {
  if (value === undefined) return isSourceCheckout() ? 'development' : 'production';
  if (value !== 'development' && value !== 'production') throw new CliError('validation_error', '--flavor must be development or production.');
  return value;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const json = rest.includes('--json');
  try {
    switch (command) {
      case 'serve': {
        const { flags, positionals } = parseArgs(rest, { init: 'boolean', port: 'string', home: 'string', flavor: 'string', 'local-edge': 'boolean', 'smtp-port': 'string', 'edge-dns': 'string', 'relay-port': 'string', dns: 'string' });
        if (positionals.length) throw new CliError('validation_error', `Unexpected argument ${positionals[0]}.`);
        const { serve } = await import('../supervisor/serve.js');
        const home = resolveHome({ home: flags.home as string | undefined, flavor: flavorOf(flags.flavor) });
        const localEdge = flags['local-edge'] === true
          ? {
              smtpPort: parsePort(flags['smtp-port'], 0, true),
              dns: typeof flags['edge-dns'] === 'string' ? flags['edge-dns'].split(',').map((s) => s.trim()).filter(Boolean) : null,
              relayPort: flags['relay-port'] === undefined ? null : parsePort(flags['relay-port'], 25, false),
            }
          : null;
        if (!localEdge && (flags['smtp-port'] !== undefined || flags['edge-dns'] !== undefined || flags['relay-port'] !== undefined)) {
          throw new CliError('validation_error', '--smtp-port, --edge-dns and --relay-port go with --local-edge.');
        }
        // Name servers for the home's domain checks (docs/domains.md); default: the --edge-dns servers.
        const dns = typeof flags.dns === 'string' ? flags.dns.split(',').map((s) => s.trim()).filter(Boolean) : (localEdge?.dns ?? null);
        return await serve({ home, init: flags.init === true, port: parsePort(flags.port, 0, true), localEdge, dns });
      }
      case 'edge': {
        const { runEdgeCommand } = await import('./edge.js');
        return await runEdgeCommand(rest);
      }
      case 'service': {
        const { runServiceCommand } = await import('./service.js');
        return await runServiceCommand(rest);
      }
      case 'oauth': {
        const { runOAuthCommand } = await import('./oauth.js');
        return await runOAuthCommand(rest);
      }
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(USAGE);
        return 0;
      default:
        throw new CliError('validation_error', `Unknown command ${command}.`, 'Run `svc help` to list the commands.');
    }
  } catch (err) {
    return reportCliError(err, json);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  () => process.exit(1),
);
