/**
 * The DNS record types a domain's plan holds, split by what the AgentMail SDK can name: its
 * `RecordType` enum is `TXT | CNAME | MX` and its validating parse refuses any other value, so a
 * domain answers those in `records` and the edge's address and reverse-DNS records in
 * `extra_records` (docs/domains.md "Fields").
 */
export const SDK_RECORD_TYPES = ['MX', 'TXT'] as const;
export const EXTRA_RECORD_TYPES = ['A', 'AAAA', 'PTR'] as const;
export type SdkRecordType = (typeof SDK_RECORD_TYPES)[number];
export type ExtraRecordType = (typeof EXTRA_RECORD_TYPES)[number];
export type RecordType = SdkRecordType | ExtraRecordType;

export const isSdkRecordType = (type: RecordType): type is SdkRecordType => (SDK_RECORD_TYPES as readonly string[]).includes(type);
