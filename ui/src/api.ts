// Typed calls into the Rust core. The UI never talks to the inbox over HTTP.
import { invoke } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';

export interface CommandError { code: string; message: string }

export function errorText(e: unknown): string {
  if (e && typeof e === 'object' && 'message' in e) return String((e as CommandError).message);
  return String(e);
}

export interface Policy {
  allowed_scopes: string[];
  max_envelope_size: number;
  rate_limit: { max_per_hour?: number | null; max_per_day?: number | null };
  'x-hold-for-consent': boolean;
  'x-allow-delegation': boolean;
  'x-consent-granted-scopes'?: string[];
  'x-reply-endpoint'?: string | null;
  'x-auto-reply-scopes'?: string[];
}

export interface TrustRow { public_key: string; name: string; added_at: string; policy: Policy; fingerprint: string; used_today: number }
export interface InboxStatus {
  running: boolean; paused: boolean; listening: string | null; watching: string | null; error: string | null;
  uamp_listening: string | null; uamp_error: string | null;
}
export interface Settings { port: number; watch_dir: string; uamp_port: number }
/** Days each kind of history is kept; 0 keeps it forever. */
export interface Retention { rejected_body_days: number; rejected_receipt_days: number; audit_days: number }
export interface AppInfo {
  version: string; data_dir: string; public_key: string; fingerprint: string; keystore: string;
  status: InboxStatus; settings: Settings; waiting: number;
  /** Refusals and knocks beyond the per-minute budget: answered, counted, not kept. */
  unkept: { refusals: number; knocks: number; last: string | null };
}
export interface InboxFilter {
  sender?: string | null; scope?: string | null; status?: string | null; transport?: string | null;
  search?: string | null; before_seq?: number | null; limit?: number | null;
}
export interface InboxItem {
  seq: number; receipt_id: string; envelope_id: string | null; status: string; code: string | null; message: string | null;
  received_at: string; transport: string; sender: string | null; sender_name: string | null; scope: string | null;
  prompt_preview: string | null; envelope_row: number | null; exec_status: string | null; payload_type: string | null;
  conversation_id: string | null; on_behalf_of: string | null; on_behalf_of_name: string | null;
}
export interface EnvelopeRow {
  id: number; envelope_id: string; sender: string; recipient: string; scope: string; payload_type: string | null;
  conversation_id: string | null; in_reply_to: string | null; on_behalf_of: string | null; prompt: string;
  timestamp: string; expires_at: string; received_at: string; transport: string; signed_form: string; raw: string;
  receipt_id: string; executor: string; exec_status: string; exec_result: unknown; exec_updated_at: string | null;
}
export interface ReceiptRow {
  receipt_id: string; envelope_id: string | null; status: string; code: string | null; message: string | null;
  received_at: string; transport: string; sender: string | null; scope: string | null; body: string | null;
  body_truncated: boolean; receipt: unknown; prompt: string | null; envelope_row: number | null;
}
export interface Detail {
  receipt: ReceiptRow; envelope: EnvelopeRow | null; steps: { name: string; state: string }[];
  sender_name: string | null; on_behalf_of_name: string | null; raw: string | null;
}
export interface ConversationMessage { envelope: EnvelopeRow; sender_name: string | null; on_behalf_of_name: string | null; depth: number }
export type ConsentItem =
  | { kind: 'unknown_sender'; public_key: string; source: KnockSource; first_seen: string; last_seen: string; count: number; scopes_tried: string[]; envelope_id: string | null; scope: string | null; prompt: string | null }
  | { kind: 'held'; row_id: number; envelope_id: string; sender: string; sender_name: string | null; scope: string; prompt: string; payload_type: string | null; on_behalf_of: string | null; received_at: string }
  | { kind: 'held_ask'; stream_id: string; sender: string; sender_name: string | null; scope: string; prompt: string; received_at: string };
/** What is knocking, decided by Gatehouse from how it arrived (never by what it wrote). */
export type KnockSource = 'epp_sender' | 'uamp_agent' | 'intent_site' | 'asop_agent';
export type ConsentTarget = { kind: 'unknown_sender'; public_key: string } | { kind: 'held'; row_id: number } | { kind: 'held_ask'; stream_id: string };
export type Decision = 'allow_once' | 'always_allow_scope' | 'deny' | 'block';
export interface AuditEntry { id: number; at: string; action: string; subject: string | null; detail: unknown }
export type ExecutorSpec =
  | { kind: 'noop' }
  | { kind: 'file-queue'; dir: string }
  | { kind: 'command'; program: string; args: string[]; timeout_secs: number }
  | { kind: 'model'; model: string; endpoint: string; system_prompt?: string | null; timeout_secs: number; api_key_secret?: string | null }
  | { kind: 'swarm'; swarm: string; entrypoint?: string | null }
  | { kind: 'peer'; peer: string; timeout_secs: number };
export interface ExecutorConfig { default: ExecutorSpec; scopes: Record<string, ExecutorSpec> }

export interface UampInfo { did: string; cert_sha256: string; listening: string | null; error: string | null }
export interface Manifest { agent: string; description: string; intents: string[]; body_types: string[]; auth: string[]; limits: { max_body_kb?: number; rate_lph?: number } }
export interface Discovered { did: string; url: string; cert_sha256: string; manifest: Manifest }
export interface Peer { did: string; name: string; url: string; cert_sha256: string; manifest: Manifest; added_at: string; has_token: boolean }
export interface UampMessage {
  id: number; message_id: string; direction: 'in' | 'out'; sender: string; recipients: string[]; intent: string;
  stream_id: string | null; reply_to: string | null; thread: string; scope: string | null; body_type: string; content: string;
  ts: string; received_at: string; receipt_id: string;
}
export interface StreamView {
  stream_id: string; message_row: number; direction: 'in' | 'out'; peer: string; state: string; delta_window: number;
  next_seq: number; acked_seq: number; updated_at: string; detail: string | null; file: string | null; mime: string | null; bytes: number;
  peer_name: string | null; ask: UampMessage | null;
}
export interface StreamDetail extends StreamView { thread: UampMessage[]; frames: unknown[]; text: string | null; image: string | null }
export interface AskProgress {
  peer: string; stream_id: string; message_id: string; frames: number; bytes: number; pct: number | null; state: string;
  mime: string | null; file: string | null; detail: unknown; error: CommandError | null;
}

export interface MailSwarm { name: string; base_url: string; added_at: string; info: MailSurvey | null; has_token: boolean }
/** What a swarm said about itself; each part is its answer or `{error}`. */
export interface MailSurvey { root: Record<string, unknown>; health: Record<string, unknown>; whoami: Record<string, unknown>; status: Record<string, unknown>; swarms: unknown }
export interface MailMessage {
  id: string; task_id: string; ts: string; msg_type: string; tier: number; sender: string; recipients: string[];
  subject: string; body: string; system_error: boolean; raw: string;
}
export interface MailTask {
  task_id: string; swarm: string | null; source: string; subject: string; state: string; response: string | null;
  task_owner: string | null; contributors: string[]; created_at: string; updated_at: string; messages: number; participants: string[];
}
export interface MailEvent { event: string; at: string | null; description: string; data: unknown }
export interface MailTaskDetail { task: MailTask; messages: MailMessage[]; events: MailEvent[] }
export type MailLive =
  | { kind: 'message'; task_id: string; message: MailMessage }
  | { kind: 'ping'; task_id: string | null }
  | { kind: 'step'; task_id: string | null; event: string; description: string }
  | { kind: 'finished'; task_id: string; completed: boolean; response: string }
  | { kind: 'unreadable'; event: string; field: string; message: string };
export interface MailOutcome { task_id: string; completed: boolean; response: string }
export interface ImportReport { source: string; tasks: string[]; imported: number; duplicates: number; errors: { line: number; field: string; message: string }[] }

export interface IwCapability { intent: string; description: string; examples: string[]; requires: string[]; constraints: string[]; notes: string[]; operating_hours: Record<string, string> }
export interface IwManifest {
  manifest_version: string; company: string; last_updated: string; about: string | null; schema_type: string | null; location: unknown;
  capabilities: IwCapability[]; contact: { intent_endpoint: string; website: string | null; phone: string | null; email: string | null; other: Record<string, string> };
}
export interface IwSite { origin: string; company: string; manifest: IwManifest; last_updated: string; fetched_at: string; site_key: string | null }
export interface IwConversation {
  interaction_id: string; origin: string; endpoint: string; capability: string | null; initial: string; query_hash: string;
  state: 'open' | 'completed' | 'failed'; status: string | null; external_id: string | null; created_at: string; updated_at: string; company?: string | null;
}
export type IwVerdict = { kind: 'verified'; kid: string } | { kind: 'new_key'; kid: string } | { kind: 'key_mismatch'; pinned: string; kid: string } | { kind: 'unsigned' } | { kind: 'invalid'; reason: string };
export interface IwMessage {
  row: number; interaction_id: string; direction: 'in' | 'out'; flow_type: string; message: string; html: string | null;
  envelope: { required_information?: string[]; explicability?: Record<string, unknown>[]; status?: string; external_id?: string; [k: string]: unknown };
  verdict: IwVerdict | null; warning: string | null; accepted: boolean; at: string;
}
export interface IwView { conversation: IwConversation; company: string | null; pinned_key: string | null; messages: IwMessage[] }
export interface IwTurn { conversation: IwConversation; sent: IwMessage; received: IwMessage }

export interface AsopStep {
  row: number; session_id: string | null; turn_id: string | null; step_id: string | null; agent_id: string | null; agent_name: string | null;
  method: string; summary: string; reasoning: string | null; request: { params?: Record<string, unknown> } & Record<string, unknown>;
  decision: string; message: string | null; rule_id: number | null; decided_by: string | null; created_at: string; decided_at: string | null;
}
export interface AsopCondition { argument: string; op: string; value: string }
export interface AsopRule { id: number; agent: string; method: string; tool: string; condition: AsopCondition | null; action: string; redact: string | null; note: string | null; source: string; created_at: string }
export interface AsopSession { session_id: string; agent: string | null; steps: number; last: string }

export interface Reply {
  id: number; envelope_row: number; in_reply_to: string; conversation_id: string; recipient: string; endpoint: string; scope: string;
  text: string; state: 'draft' | 'sent' | 'failed'; sent_envelope: unknown; receipt: { status?: string; error?: { code?: string; message?: string } } | null;
  error: string | null; created_at: string; updated_at: string;
}

export const api = {
  appInfo: () => invoke<AppInfo>('app_info'),
  inboxList: (filter: InboxFilter) => invoke<InboxItem[]>('inbox_list', { filter }),
  inboxDetail: (receiptId: string) => invoke<Detail>('inbox_detail', { receiptId }),
  conversation: (conversationId: string) => invoke<ConversationMessage[]>('conversation', { conversationId }),
  trustList: () => invoke<TrustRow[]>('trust_list'),
  trustAdd: (input: { public_key: string; name: string; policy: Policy }) => invoke<void>('trust_add', { input }),
  trustUpdate: (input: { public_key: string; name: string; policy: Policy }) => invoke<void>('trust_update', { input }),
  trustRemove: (publicKey: string) => invoke<void>('trust_remove', { publicKey }),
  trustBlock: (publicKey: string) => invoke<void>('trust_block', { publicKey }),
  trustUnblock: (publicKey: string) => invoke<void>('trust_unblock', { publicKey }),
  blockedList: () => invoke<{ public_key: string; blocked_at: string; reason: string }[]>('blocked_list'),
  consentList: () => invoke<ConsentItem[]>('consent_list'),
  consentDecide: (target: ConsentTarget, decision: Decision) => invoke<{ message: string }>('consent_decide', { target, decision }),
  auditList: () => invoke<AuditEntry[]>('audit_list'),
  settingsSet: (settings: Settings) => invoke<InboxStatus>('settings_set', { settings }),
  retentionGet: () => invoke<Retention>('retention_get'),
  retentionSet: (retention: Retention) => invoke<Retention>('retention_set', { retention }),
  inboxPause: (paused: boolean) => invoke<InboxStatus>('inbox_pause', { paused }),
  executorsGet: () => invoke<ExecutorConfig>('executors_get'),
  executorsSet: (config: ExecutorConfig) => invoke<void>('executors_set', { config }),
  identityQr: () => invoke<string>('identity_qr'),
  exportJson: (kind: 'receipts' | 'audit' | 'conversations' | 'guardian', path: string) => invoke<number>('export_json', { kind, path }),
  uampInfo: () => invoke<UampInfo>('uamp_info'),
  /** Opens Gatehouse's own native dialog; only a path chosen there may be used for that purpose. */
  pickPath: (purpose: 'export' | 'mail_log' | 'watch_folder', suggestedName?: string) => invoke<string | null>('pick_path', { purpose, suggestedName: suggestedName ?? null }),
  uampTokenIssue: (sender: string) => invoke<string>('uamp_token_issue', { sender }),
  uampTokenRevoke: (sender: string) => invoke<number>('uamp_token_revoke', { sender }),
  uampDiscover: (url: string) => invoke<Discovered>('uamp_discover', { url }),
  uampPeerAdd: (input: { url: string; name: string; cert_sha256: string; token: string | null }) => invoke<Peer>('uamp_peer_add', { input }),
  uampPeers: () => invoke<Peer[]>('uamp_peers'),
  uampPeerRemove: (did: string) => invoke<void>('uamp_peer_remove', { did }),
  uampAsk: (peer: string, content: string, bodyType?: string) => invoke<string>('uamp_ask', { peer, content, bodyType: bodyType ?? null }),
  uampCancel: (streamId: string) => invoke<void>('uamp_cancel', { streamId }),
  uampStreams: () => invoke<StreamView[]>('uamp_streams'),
  uampStreamDetail: (streamId: string) => invoke<StreamDetail>('uamp_stream_detail', { streamId }),
  mailSwarms: () => invoke<MailSwarm[]>('mail_swarms'),
  mailSwarmAdd: (input: { url: string; name: string; token: string | null }) => invoke<MailSwarm>('mail_swarm_add', { input }),
  mailSwarmRefresh: (name: string) => invoke<MailSurvey>('mail_swarm_refresh', { name }),
  mailSwarmRemove: (name: string) => invoke<void>('mail_swarm_remove', { name }),
  mailSend: (input: { swarm: string; body: string; subject: string | null; task_id: string | null; entrypoint: string | null }) => invoke<MailOutcome>('mail_send', { input }),
  mailInterswarm: (input: { swarm: string; body: string; targets: string[]; subject: string | null; task_id: string | null }) => invoke<MailMessage>('mail_interswarm', { input }),
  mailTasks: (query: string | null) => invoke<MailTask[]>('mail_tasks', { query }),
  mailTask: (taskId: string) => invoke<MailTaskDetail>('mail_task', { taskId }),
  mailImport: (path: string) => invoke<ImportReport>('mail_import', { path }),
  iwSites: () => invoke<IwSite[]>('iw_sites'),
  iwSiteAdd: (origin: string) => invoke<IwSite>('iw_site_add', { origin }),
  iwSiteRemove: (origin: string) => invoke<void>('iw_site_remove', { origin }),
  iwStart: (input: { origin: string; capability: string | null; message: string }) => invoke<IwTurn>('iw_start', { input }),
  iwReply: (input: { interaction_id: string; message: string; flow_type: string | null }) => invoke<IwTurn>('iw_reply', { input }),
  iwPin: (origin: string, kid: string) => invoke<void>('iw_pin', { origin, kid }),
  iwConversations: () => invoke<IwConversation[]>('iw_conversations'),
  iwConversation: (interactionId: string) => invoke<IwView>('iw_conversation', { interactionId }),
  iwOpenLink: (url: string) => invoke<void>('iw_open_link', { url }),
  asopPending: () => invoke<AsopStep[]>('asop_pending'),
  asopAnswer: (row: number, answer: { decision: 'allow' | 'deny' | 'modify'; always: boolean; redact: string | null; note: string | null }) => invoke<void>('asop_answer', { row, answer }),
  asopRules: () => invoke<AsopRule[]>('asop_rules'),
  asopRuleAdd: (input: { agent: string; method: string; tool: string; condition: AsopCondition | null; action: string; redact: string | null; note: string | null }) => invoke<AsopRule>('asop_rule_add', { input }),
  asopRuleRemove: (id: number) => invoke<void>('asop_rule_remove', { id }),
  asopSessions: () => invoke<AsopSession[]>('asop_sessions'),
  asopSession: (sessionId: string) => invoke<AsopStep[]>('asop_session', { sessionId }),
  repliesFor: (envelopeRow: number) => invoke<Reply[]>('replies_for', { envelopeRow }),
  replySend: (id: number, text: string) => invoke<Reply>('reply_send', { id, text }),
  executorRetry: (envelopeRow: number) => invoke<void>('executor_retry', { envelopeRow }),
};

export function onMailEvent(f: (e: MailLive) => void): Promise<UnlistenFn> {
  return listen<MailLive>('mail://event', (e) => f(e.payload));
}

export function onUampProgress(f: (p: AskProgress) => void): Promise<UnlistenFn> {
  return listen<AskProgress>('uamp://progress', (e) => f(e.payload));
}

/** An executor at work: the answer so far (whole), a note, or its stored end. */
export type ExecProgress =
  | { kind: 'partial'; envelope_row: number; text: string }
  | { kind: 'note'; envelope_row: number; note: string }
  | { kind: 'finished'; envelope_row: number; status: string };

export function onExecProgress(f: (p: ExecProgress) => void): Promise<UnlistenFn> {
  return listen<ExecProgress>('executor://progress', (e) => f(e.payload));
}

export function onInboxEvent(f: () => void): Promise<UnlistenFn> {
  return listen('inbox://received', f);
}
export function onStatus(f: () => void): Promise<UnlistenFn> {
  return listen('inbox://status', f);
}
