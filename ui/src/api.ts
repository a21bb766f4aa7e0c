// The window's calls into Rust. The commands and every type that crosses are generated
// from the Rust side (bindings.ts: `GATEHOUSE_BLESS=1 cargo test --test bindings`); this
// file gives a few of them the UI's names and optional arguments, and types the events.
import type { UnlistenFn } from '@tauri-apps/api/event';
import { commands, events, type Code, type CommandError, type ExecProgress, type MailLive, type ProgressEvent, type Purpose, type ServerInfo, type TeamWaiting, type Value } from './bindings';

export type * from './bindings';
export type {
  DesktopSettings as Settings, PeerView as Peer, SwarmView as MailSwarm, IwSiteRow as IwSite,
  IwConversationRow as IwConversation, IwMessageRow as IwMessage, ConversationView as IwView, Turn as IwTurn,
  AsopStepRow as AsopStep, AsopRuleRow as AsopRule, SessionItem as AsopSession, Condition as AsopCondition,
  ReplyRow as Reply, MailTaskRow as MailTask, MailMessageRow as MailMessage, MailEventRow as MailEvent,
  Outcome as MailOutcome, Source as KnockSource, TrustInput, UserAnswer, Capability as IwCapability, Verdict as IwVerdict,
} from './bindings';

/** What a failed command rejects with: a code the UI can branch on, and a sentence. */
export function isCommandError(e: unknown): e is CommandError {
  return !!e && typeof e === 'object' && 'code' in e && 'message' in e;
}

/** Whether a command failed with this code. */
export function hasCode(e: unknown, code: Code): boolean {
  return isCommandError(e) && e.code === code;
}

export function errorText(e: unknown): string {
  if (e && typeof e === 'object' && 'message' in e) return String((e as { message: unknown }).message);
  return String(e);
}

/** A JSON value the UI reads as a known shape (the Rust side passes it through as JSON). */
export function asShape<T>(v: Value | unknown): T {
  return v as T;
}

/** What a swarm said about itself; each part is its answer or `{error}`. */
/** `server` is `GET /` read from either shape (openapi.yaml's or the reference's); old surveys have only `root`. */
export interface MailSurvey { server?: ServerInfo; root: Record<string, unknown>; health: Record<string, unknown>; whoami: Record<string, unknown>; status: Record<string, unknown>; swarms: unknown }

export const api = {
  ...commands,
  /** Opens Gatehouse's own native dialog; only a path chosen there may be used for that purpose. */
  pickPath: (purpose: Purpose, suggestedName?: string) => commands.pickPath(purpose, suggestedName ?? null),
  uampAsk: (peer: string, content: string, bodyType?: string) => commands.uampAsk(peer, content, bodyType ?? null),
  mailSwarmRefresh: async (name: string) => asShape<MailSurvey>(await commands.mailSwarmRefresh(name)),
};

// ---- events: generated with the commands ----

export type { ProgressEvent as AskProgress } from './bindings';

export function onMailEvent(f: (e: MailLive) => void): Promise<UnlistenFn> {
  return events.mailEvent.listen((e) => f(e.payload));
}

export function onUampProgress(f: (p: ProgressEvent) => void): Promise<UnlistenFn> {
  return events.uampProgress.listen((e) => f(e.payload));
}

export function onExecProgress(f: (p: ExecProgress) => void): Promise<UnlistenFn> {
  return events.executorProgress.listen((e) => f(e.payload));
}

export function onInboxEvent(f: () => void): Promise<UnlistenFn> {
  return events.inboxReceived.listen(() => f());
}
/** A prompt's notification was clicked: the sender whose prompt to show (null: any). */
export function onOpenPrompt(f: (sender: string | null) => void): Promise<UnlistenFn> {
  return events.consentOpen.listen((e) => f(e.payload.sender));
}

/** What waits changed (decided anywhere, or something arrived). */
export function onWaitingChanged(f: () => void): Promise<UnlistenFn> {
  return events.consentChanged.listen(() => f());
}

export function onTeamChanged(f: (t: TeamWaiting) => void): Promise<UnlistenFn> {
  return events.teamChanged.listen((e) => f(e.payload));
}

export function onStatus(f: () => void): Promise<UnlistenFn> {
  return events.inboxStatus.listen(() => f());
}
