/**
 * `svc pods`: list, show, create and delete pods, AgentMail's tenants (docs/pods.md). A pod's own
 * inboxes, keys, domains and webhooks are managed through the pod routes (`/v0/pods/{pod_id}/...`).
 */
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group } from './commands.js';
import { fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { PodResponse as Pod } from '../pods/schemas.js';

const COLUMNS: Column<Pod>[] = [
  ['POD', (p) => p.pod_id, WHOLE],
  ['NAME', (p) => p.name],
  ['CREATED', (p) => p.created_at],
];

function showPod(ctx: Ctx, pod: Pod, lead?: string): void {
  if (ctx.json) return printJson(pod);
  out((lead ? `${lead}\n` : '') + fields([['pod', pod.pod_id], ['name', pod.name], ['client id', pod.client_id ?? null], ['created', pod.created_at]]));
}

export const group: Group = {
  name: 'pods',
  summary: 'tenants: each owns its inboxes, domains, webhooks and API keys',
  notes: 'Every home has the pod `default`, which holds the inboxes made without a pod. A key made under a pod sees that pod only (docs/pods.md).',
  actions: {
    list: {
      summary: 'List the pods the caller can see.',
      options: PAGE_OPTIONS,
      examples: ['svc pods list', 'svc pods list --json'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ pods: Pod[]; next_page_token?: string }>('GET', '/v0/pods', { query: pageQuery(ctx) });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.pods, COLUMNS, 'No pods.'));
      },
    },
    show: {
      summary: 'Show one pod.',
      usage: '<pod_id>',
      args: [1, 1],
      examples: ['svc pods show default'],
      async run(ctx) {
        const client = await ctx.client();
        showPod(ctx, await client.call<Pod>('GET', `/v0/pods/${enc(ctx.args[0])}`));
      },
    },
    create: {
      summary: 'Create a pod (owner).',
      usage: '[<name>]',
      args: [0, 1],
      options: [opt('client-id ID', 'A create key: repeating the create returns the same pod.')],
      examples: ['svc pods create "Customer A"', 'svc pods create "Customer A" --client-id customer-a --json'],
      async run(ctx) {
        const client = await ctx.client();
        const pod = await client.call<Pod>('POST', '/v0/pods', { body: { name: ctx.args[0], client_id: ctx.str('client-id') } });
        showPod(ctx, pod, `Created pod ${pod.pod_id}. Create its inboxes and keys under /v0/pods/${pod.pod_id}/.`);
      },
    },
    delete: {
      summary: 'Delete an empty pod (owner); its API keys, webhooks and list entries go with it.',
      usage: '<pod_id>',
      args: [1, 1],
      examples: ['svc pods delete 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `/v0/pods/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, pod_id: ctx.args[0] });
        out(`Deleted pod ${ctx.args[0]}.`);
      },
    },
  },
};
