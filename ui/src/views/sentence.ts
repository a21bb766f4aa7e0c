// What a prompt asks, in one sentence: who wants to reach your AI, about what, by which
// door. Said the same under Waiting for you and for a team gate's items.
import type { ConsentItem } from '../api';
import { senderLabel, unnamedName, when } from '../format';

/** What waits, other than an agent's step or an MCP server's changed tools (each decided
 *  in its own card). */
export type Prompt = Exclude<ConsentItem, { kind: 'guardian_step' } | { kind: 'tool_change' }>;

export function consentSentence(item: Prompt): string {
  if (item.kind === 'unknown_sender') {
    const scope = item.scope ?? item.scopes_tried[0] ?? 'something';
    const times = item.count > 1 ? ` (${item.count} attempts so far)` : '';
    // Trusted already: what it asks about is new, not who it is.
    if (item.known_as) {
      return `${item.known_as}, whom you trust for other things, wants to send your AI a message about “${scope}”${times}, which you have not allowed it. Allow it once, or for good, or deny it.`;
    }
    // Worded by where the knock came from, never by the scope a sender chose.
    if (item.source === 'asop_agent') {
      return `Your agent “${item.public_key.replace(/^asop:/, '')}” wants Gatehouse to guard what it does (ASOP). Let it in, and its steps are decided by your rules — or asked about here.`;
    }
    if (item.source === 'mcp_server') {
      return `${unnamedName(item.public_key)}, which your AI app runs, wants its tools to be usable through Gatehouse. Let it in, and each call is decided by your rules — or asked about here.`;
    }
    if (item.source === 'intent_site') {
      return `A company you contacted over IntentWeb signs its answers with a key you have not pinned (${unnamedName(item.public_key)}). Pin it so that later answers signed by any other key are refused.`;
    }
    if (item.source === 'a2a_agent') {
      return `An AI agent you have not approved (${unnamedName(item.public_key)}, by its certificate, over A2A) wants to send your AI a message about “${scope}”${times}. It proved only that it holds this key: nothing it says about itself is checked.`;
    }
    if (item.source === 'other_door') {
      return `Something (${unnamedName(item.public_key)}) knocked about “${scope}” at a door this Gatehouse does not run${times}. It cannot be let in from here; deny it or block it.`;
    }
    if (item.source === 'uamp_agent') {
      return `An AI agent you have not approved (${unnamedName(item.public_key)}, over UAMP) wants to send your AI a message about “${scope}”${times}.`;
    }
    return `Someone you have not approved (${unnamedName(item.public_key)}) wants to send your AI a message about “${scope}”${times}.`;
  }
  const who = senderLabel(item.sender_name, item.sender);
  if (item.kind === 'key_change') {
    const what = item.count > 1 ? `${item.count} messages` : 'a message';
    return `${who} (an AI agent you trust, over UAMP) signed ${what} with a key you did not trust it with. Its keys may have changed — or someone else is using its name. Nothing signed with that key got through.`;
  }
  // A grant for a while that ended asks again, and says so.
  const why = item.grant_ended ? `Your permission for “${item.scope}” ended ${when(item.grant_ended)}, so you are asked again` : 'Your rules say to ask you';
  if (item.kind === 'held_ask') {
    return `${who} (an AI agent, over UAMP) asked your AI about “${item.scope}”. ${why} before it runs; the agent is waiting on its stream.`;
  }
  return `${who} sent your AI a message about “${item.scope}”. ${why} before it is passed on.`;
}
