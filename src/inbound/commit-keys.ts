/**
 * The inbound commit keys (spec §1.3): each recipient's copy of an edge object is committed, or
 * refused by a block list, under `<object key>:<inbox>`, so a crash between commit and the edge
 * delete never stores a message twice. These lookups answer "has the home already taken this
 * object (or this copy)?" — for the committer, the automatic quarantine retry and the reconcile
 * loop. Keys sort so that every `<key>:…` lies in [`<key>:`, `<key>;`) (';' follows ':').
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { isRejected } from './rejections.js';

export const commitKey = (objectKey: string, inboxId: string) => `${objectKey}:${inboxId}`;

/** Whether this recipient's copy was committed or refused by a block list already. */
export function isCommitHandled(db: Db, sourceKey: string): boolean {
  return Boolean(prepared(db, 'SELECT 1 FROM messages WHERE source_key = ?').get(sourceKey)) || isRejected(db, sourceKey);
}

/** Whether this edge object was committed or refused by a block list for any recipient: the edge may delete it. */
export function wasHandled(db: Db, objectKey: string): boolean {
  return Boolean(
    (
      prepared(
        db,
        // Named, not `?1`: better-sqlite3 counts each `?1` as a parameter of its own and refuses the one value.
        "SELECT EXISTS (SELECT 1 FROM messages WHERE source_key >= @key || ':' AND source_key < @key || ';') OR EXISTS (SELECT 1 FROM inbound_rejections WHERE source_key >= @key || ':' AND source_key < @key || ';') AS done",
      ).get({ key: objectKey }) as { done: number }
    ).done,
  );
}
