/**
 * Every page of a keyset-paged read, followed with its cursor: the items of all pages in order.
 * Bounded, so a cursor that never ends fails the test instead of hanging it.
 */
import type { Cursor } from '../../src/core/pagination.js';

export function everyPage<T>(read: (cursor: Cursor | null) => { items: T[]; next: Cursor | null }, maxPages = 1000): T[] {
  const all: T[] = [];
  let cursor: Cursor | null = null;
  for (let i = 0; i < maxPages; i++) {
    const page = read(cursor);
    all.push(...page.items);
    if (!page.next) return all;
    cursor = page.next;
  }
  throw new Error(`more than ${maxPages} pages`);
}
