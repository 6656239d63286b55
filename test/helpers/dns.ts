/**
 * A loopback DNS server (dns2, UDP on 127.0.0.1) holding a small zone, so SPF, DKIM and DMARC
 * are evaluated against real DNS answers without touching the system resolver or the internet.
 */
import dns2 from 'dns2';
import { dnsResolver, type DNSResolver } from '../../src/edge/auth.js';

const { Packet } = dns2;

export interface ZoneRecords {
  /** Each entry is one TXT record; long ones are split into 255-byte strings as DNS requires. */
  TXT?: string[];
  A?: string[];
  MX?: { exchange: string; priority: number }[];
}

export type Zone = Record<string, ZoneRecords>;

export interface LoopbackDns {
  port: number;
  /** `127.0.0.1:<port>`, for `dnsResolver([...])` or `svc edge --dns`. */
  server: string;
  /** mailauth resolver pointed at this server only (the edge's own production resolver code). */
  resolver: DNSResolver;
  /** Every question asked, as `TYPE name`, in order. */
  queries: string[];
  /** The zone; tests may add records while the server runs. */
  zone: Zone;
  close(): Promise<void>;
}

const TYPE_NAMES = new Map<number, string>(Object.entries(Packet.TYPE).map(([name, value]) => [value as number, name]));
const NXDOMAIN = 3;

function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 255) out.push(text.slice(i, i + 255));
  return out.length ? out : [''];
}

export async function startLoopbackDns(zone: Zone): Promise<LoopbackDns> {
  const queries: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      for (const question of request.questions) {
        const type = TYPE_NAMES.get(question.type) ?? String(question.type);
        const name = question.name.toLowerCase().replace(/\.$/, '');
        queries.push(`${type} ${name}`);
        const records = zone[name];
        if (!records) {
          response.header.rcode = NXDOMAIN;
          continue;
        }
        const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
        if (type === 'TXT') for (const txt of records.TXT ?? []) response.answers.push({ ...base, type: Packet.TYPE.TXT, data: chunks(txt) } as never);
        if (type === 'A') for (const address of records.A ?? []) response.answers.push({ ...base, type: Packet.TYPE.A, address } as never);
        if (type === 'MX') for (const mx of records.MX ?? []) response.answers.push({ ...base, type: Packet.TYPE.MX, ...mx } as never);
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp!.port;
  const address = `127.0.0.1:${port}`;
  return {
    port,
    server: address,
    resolver: dnsResolver([address]),
    queries,
    zone,
    close: () => server.close(),
  };
}
