/** The `svc` command line: dispatches to one module per command group. */
import { parseArgs, parsePort } from './args.js';
import { CliError, reportCliError } from './exit-codes.js';
import { isSourceCheckout } from './package-root.js';
import { resolveHome, type Flavor } from '../keys/home.js';

function flavorOf(value: string | boolean | undefined): Flavor {
  if (value === undefined) return isSourceCheckout() ? 'development' : 'production';
  if (value !== 'development' && value !== 'production') throw new CliError('validation_error', '--flavor must be development or production.');
  return value;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const json = rest.includes('--json');
  try {
    if (command && (rest.includes('--help') || rest.includes('-h')) && (await (await import('./registry.js')).localHelp(command, rest))) return 0;
    switch (command) {
      case 'serve': {
        (await import('./owner-client.js')).rejectAgentEnvironment('svc serve');
        const { flags, positionals } = parseArgs(rest, { init: 'boolean', port: 'string', home: 'string', flavor: 'string', 'local-edge': 'boolean', 'smtp-port': 'string', 'edge-dns': 'string', 'relay-port': 'string', dns: 'string' });
        if (positionals.length) throw new CliError('validation_error', `Unexpected argument ${positionals[0]}.`);
        const { serve } = await import('../supervisor/serve.js');
        const home = resolveHome({ home: flags.home as string | undefined, flavor: flavorOf(flags.flavor) });
        const localEdge = flags['local-edge'] === true
          ? {
              smtpPort: flags['smtp-port'] === undefined ? null : parsePort(flags['smtp-port'], 0, true),
              dns: typeof flags['edge-dns'] === 'string' ? flags['edge-dns'].split(',').map((s) => s.trim()).filter(Boolean) : null,
              relayPort: flags['relay-port'] === undefined ? null : parsePort(flags['relay-port'], 25, false),
            }
          : null;
        if (!localEdge && (flags['smtp-port'] !== undefined || flags['edge-dns'] !== undefined || flags['relay-port'] !== undefined)) {
          throw new CliError('validation_error', '--smtp-port, --edge-dns and --relay-port go with --local-edge.');
        }
        // Name servers for the home's domain checks (docs/domains.md); default: the --edge-dns servers.
        const dns = typeof flags.dns === 'string' ? flags.dns.split(',').map((s) => s.trim()).filter(Boolean) : (localEdge?.dns ?? null);
        const flavor = flavorOf(flags.flavor);
        return await serve({ home, flavor, init: flags.init === true, port: flags.port === undefined ? null : parsePort(flags.port, 0, true), localEdge, dns });
      }
      case 'edge': {
        if (rest[0] === 'cloudflare' && (rest[1] === 'init' || rest[1] === 'deploy' || rest[1] === 'status')) {
          return await (await import('./edge-cloudflare-deploy.js')).runEdgeCloudflareDeployCommand(rest[1], rest.slice(2));
        }
        if (rest[0] === 'cloudflare') return await (await import('./edge-cloudflare.js')).runEdgeCloudflareCommand(rest.slice(1));
        const { runEdgeCommand } = await import('./edge.js');
        return await runEdgeCommand(rest);
      }
      case 'init': {
        (await import('./owner-client.js')).rejectAgentEnvironment('svc init');
        const { runInitCommand } = await import('./init.js');
        return await runInitCommand(rest);
      }
      case 'service': {
        const { runServiceCommand } = await import('./service.js');
        return await runServiceCommand(rest);
      }
      case 'oauth': {
        const { runOAuthCommand } = await import('./oauth.js');
        return await runOAuthCommand(rest);
      }
      case '--version':
      case '-v':
      case 'version': {
        const { packageRoot } = await import('./package-root.js');
        const pkg = JSON.parse((await import('node:fs')).readFileSync(`${packageRoot}/package.json`, 'utf8')) as { version: string };
        process.stdout.write(json ? `${JSON.stringify({ version: pkg.version, node: process.versions.node })}\n` : `svc ${pkg.version} (Node.js ${process.versions.node})\n`);
        return 0;
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write((await import('./registry.js')).overview());
        return 0;
      default: {
        // The client command groups (status, inboxes, send, …): src/cli/registry.ts.
        const code = await (await import('./registry.js')).runRegistered(command, rest);
        if (code !== null) return code;
        throw new CliError('validation_error', `Unknown command ${command}.`, 'Run `svc help` to list the commands.');
      }
    }
  } catch (err) {
    return reportCliError(err, json);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  () => process.exit(1),
);
