/**
 * Draft states (spec §2.5; ARCHITECTURE §5; docs/drafts.md "States and transitions"): the seven
 * states a draft is in, stored in the `send_status` column, and what an AgentMail client reads of
 * each as `send_status`.
 */


export const DRAFT_STATUSES = ['draft', 'pending_approval', 'scheduled', 'sending', 'sent', 'rejected', 'failed'] as const;
export type DraftStatus = (typeof DRAFT_STATUSES)[number];

/** The AgentMail SDK's draft `send_status` enum; svc's full state goes in the `state` extension field. */
export const SDK_DRAFT_SEND_STATUSES = ['scheduled', 'sending', 'failed'] as const;
export type SdkDraftSendStatus = (typeof SDK_DRAFT_SEND_STATUSES)[number];

/**
 * What an AgentMail client reads as `send_status` for each svc state (docs/drafts.md). `rejected`
 * reads as `failed`: it will never be sent, a final non-delivery. The states the SDK cannot name
 * (`draft`, `pending_approval`, `sent`) leave the field out, as AgentMail does for an unsent draft.
 */
export const SDK_SEND_STATUS_OF: Readonly<Record<DraftStatus, SdkDraftSendStatus | null>> = {
  draft: null,
  pending_approval: null,
  scheduled: 'scheduled',
  sending: 'sending',
  sent: null,
  rejected: 'failed',
  failed: 'failed',
};
