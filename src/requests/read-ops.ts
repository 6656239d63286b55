/**
 * The read requests that reader threads answer (src/supervisor/readers.ts, workers/readers/reader.ts):
 * each is a request operation of src/requests taking the database first, then structured-cloneable
 * arguments (the principal, ids, the parsed query), and returning plain data. Only operations that
 * never write and need nothing of the main thread (no per-process keys, no bus) belong here.
 */
import type { Db } from '../db/open.js';
import { batchGetMessagesFor, messageListPage, messageSearchPage, readMessage } from './messages.js';
import { readThread, threadListPage, threadSearchPage } from './threads.js';
import { startMessageWait, waitedMessage } from './message-waits.js';
import { receivedAfterSeq } from '../mail/waits.js';
import { metricCounts, metricEvents, metricUsage } from './metrics.js';
import { readDraftFor } from './draft-read.js';
import { ownerThreadListPage, ownerThreadSearchPage, ownerUnreadCounts } from './owner-mail.js';

export const READ_OPS = {
  /** Loads a reader thread and opens its connection (`Readers.start`); answers true. */
  ping: (_db: Db) => true,
  threadListPage,
  threadSearchPage,
  readThread,
  messageListPage,
  messageSearchPage,
  readMessage,
  batchGetMessagesFor,
  startMessageWait,
  receivedAfterSeq,
  waitedMessage,
  metricEvents,
  metricUsage,
  metricCounts,
  readDraftFor,
  ownerThreadListPage,
  ownerThreadSearchPage,
  ownerUnreadCounts,
} as const;

export type ReadOp = keyof typeof READ_OPS;
export type ReadArgs<K extends ReadOp> = Parameters<(typeof READ_OPS)[K]> extends [Db, ...infer Rest] ? Rest : never;
export type ReadResult<K extends ReadOp> = ReturnType<(typeof READ_OPS)[K]>;

/**
 * Searches run in their own lane, so a cheap read never waits behind them (issue 19); so do the
 * metrics series, which walk a window of up to 90 days (issue 20 §5).
 */
export const SEARCH_OPS: ReadonlySet<ReadOp> = new Set(['threadSearchPage', 'messageSearchPage', 'ownerThreadSearchPage', 'metricEvents', 'metricUsage']);
