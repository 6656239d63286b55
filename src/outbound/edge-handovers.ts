/**
 * Which edges an outbound job may have reached (docs/outbound.md "Several edges"). A job is
 * recorded against an edge before it is handed to it, and the record is dropped only when that
 * edge is known not to hold it (the connection was refused, or it answered that it does not know
 * the ref). Before a job goes to another edge, every edge recorded for it is asked; while one
 * cannot be asked the job waits, so two edges never both send it. Each write is its own small
 * transaction (the outbox loop is its own top level).
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

/** Records older than this are swept (the outbox settles every message long before). */
const HANDOVER_KEEP_MS = 30 * 24 * 60 * 60_000;

/** The edges (URLs) that may hold `ref`, oldest record first. */
export function handoverEdges(db: Db, ref: string): string[] {
  return (prepared(db, 'SELECT url FROM outbound_edge_handovers WHERE ref = ? ORDER BY at, url').all(ref) as { url: string }[]).map((r) => r.url);
}

/** Before the request: a crash after this leaves the record, and recovery asks that edge. */
export function recordHandover(db: Db, ref: string, url: string): void {
  db.transaction(() => prepared(db, 'INSERT OR IGNORE INTO outbound_edge_handovers (ref, url, at) VALUES (?, ?, ?)').run(ref, url, new Date().toISOString()))();
}

/** The edge is known not to hold `ref`. */
export function forgetHandover(db: Db, ref: string, url: string): void {
  db.transaction(() => prepared(db, 'DELETE FROM outbound_edge_handovers WHERE ref = ? AND url = ?').run(ref, url))();
}

/** Sweeps old records. Runs inside the caller's transaction. */
export function forgetOldHandovers(db: Db, now = Date.now()): void {
  prepared(db, 'DELETE FROM outbound_edge_handovers WHERE at < ?').run(new Date(now - HANDOVER_KEEP_MS).toISOString());
}
