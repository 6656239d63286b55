/**
 * The schemas of a label edit (`add_labels` / `remove_labels`; src/mail/labels.ts holds the rules).
 * Apart so that the loops, which apply labels but check no request, do not load typebox (a few
 * MiB per thread).
 */
import { Type } from 'typebox';
import { MAX_LABELS_PER_EDIT } from './labels.js';

/** `add_labels` / `remove_labels`: one label or a list (the AgentMail SDK sends either). */
export const LabelList = Type.Union([
  Type.String({ maxLength: 1024 }),
  Type.Array(Type.String({ maxLength: 1024 }), { maxItems: MAX_LABELS_PER_EDIT }),
]);
export const LabelEditBody = {
  add_labels: Type.Optional(LabelList),
  remove_labels: Type.Optional(LabelList),
};
