/**
 * The label-edit request body (spec §4.4, §4.5): `add_labels` and `remove_labels`, each a label
 * or a list of labels, null meaning none. One schema for the message, thread and batch edits,
 * the draft send and the MCP tools, so every label edit accepts the same input.
 */
import { Type, type Static } from 'typebox';
import { LabelEditBody } from '../mail/label-schemas.js';

const nullable = <T extends typeof LabelEditBody.add_labels>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

/** The properties, for bodies that carry a label edit next to other fields (batch update). */
export const LabelEditFields = { add_labels: nullable(LabelEditBody.add_labels), remove_labels: nullable(LabelEditBody.remove_labels) };

export const LabelEditRequest = Type.Object(LabelEditFields, { additionalProperties: false });
export type LabelEditRequest = Static<typeof LabelEditRequest>;
