import type { ChatChunk, ChatFinishReason, ChatMessage, ChatToolCall } from '../providers/spec.ts';

/**
 * Puts a streamed answer back together (first choice): its text, its tool calls (their pieces
 * joined by index), its thinking blocks and its finish reason, as the assistant message to keep
 * in a conversation.
 */
export class StreamedReply {
  private content = '';
  private readonly toolCalls: ChatToolCall[] = [];
  private readonly thinkingBlocks: unknown[] = [];
  finishReason: ChatFinishReason | null = null;

  add(chunk: ChatChunk): void {
    const choice = chunk.choices[0];
    if (!choice || choice.index !== 0) return;
    const { delta } = choice;
    if (delta.content) this.content += delta.content;
    for (const piece of delta.tool_calls ?? []) {
      const call = (this.toolCalls[piece.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.function.name += piece.function.name;
      if (piece.function?.arguments) call.function.arguments += piece.function.arguments;
    }
    if (Array.isArray(delta.thinking_blocks)) this.thinkingBlocks.push(...delta.thinking_blocks);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  /**
   * The assistant message; provider extras (reasoning text) are left out, as upstreams refuse them
   * in later turns, except the thinking blocks Anthropic wants back with the tool calls.
   */
  message(): ChatMessage {
    const calls = this.toolCalls.filter(Boolean);
    return {
      role: 'assistant',
      content: this.content === '' && calls.length > 0 ? null : this.content,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
      ...(this.thinkingBlocks.length > 0 ? { thinking_blocks: this.thinkingBlocks } : {}),
    };
  }
}
