/**
 * Prices applied to what a call used and to what a request asks for (src/limits/pricing.ts), in
 * micro-credits, without a server.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { charactersOf, costOf, estimateInputTokens, estimateOf, NOTHING_USED, promptTokensOf, secondsOf, tokenUsageOf } from '../../src/limits/pricing.ts';

describe('costOf', () => {
  it('costs nothing without prices, whatever was used', () => {
    assert.equal(costOf(undefined, { ...NOTHING_USED, inputTokens: 1000, cachedInputTokens: 1000, outputTokens: 1000, images: 4, seconds: 10, characters: 500 }), 0);
  });

  it('adds every priced quantity, per million tokens, per image, per second and per thousand characters, in micro-credits', () => {
    const pricing = { per_request: 0.5, input_per_million: 2, output_per_million: 8, per_image: 0.25, per_second: 0.1, per_1k_characters: 0.3 };
    // 0.5 + 2 * 1500 / 1e6 + 8 * 250 / 1e6 + 0.25 * 3 + 0.1 * 4 + 0.3 * 2000 / 1000 = 2.255
    assert.equal(costOf(pricing, { ...NOTHING_USED, inputTokens: 1500, outputTokens: 250, images: 3, seconds: 4, characters: 2000 }), 2_255_000);
  });

  it('charges a request price alone when nothing else was used, and ignores quantities without a price', () => {
    assert.equal(costOf({ per_request: 1.25 }, NOTHING_USED), 1_250_000);
    assert.equal(costOf({ per_image: 0.04 }, { ...NOTHING_USED, inputTokens: 9999, seconds: 30, images: 2 }), 80_000);
  });

  it('prices uncached input, cached input, cache writes and output each at its own price', () => {
    const pricing = { input_per_million: 2, cached_input_per_million: 0.5, cache_write_per_million: 2.5, output_per_million: 8 };
    // 2 * 1000 / 1e6 + 0.5 * 4000 / 1e6 + 2.5 * 2000 / 1e6 + 8 * 500 / 1e6 = 0.002 + 0.002 + 0.005 + 0.004 = 0.013
    assert.equal(costOf(pricing, { ...NOTHING_USED, inputTokens: 1000, cachedInputTokens: 4000, cacheWriteTokens: 2000, outputTokens: 500 }), 13_000);
  });

  it('prices cached input and cache writes at the input price when they have none of their own', () => {
    // 2 * (1000 + 4000 + 2000) / 1e6 = 0.014
    assert.equal(costOf({ input_per_million: 2 }, { ...NOTHING_USED, inputTokens: 1000, cachedInputTokens: 4000, cacheWriteTokens: 2000 }), 14_000);
    // Only the write price set: cached input falls back to the input price.
    assert.equal(costOf({ input_per_million: 2, cache_write_per_million: 3 }, { ...NOTHING_USED, cachedInputTokens: 1000, cacheWriteTokens: 1000 }), 5_000);
  });

  it('rounds to a whole micro-credit', () => {
    // 3 tokens at 0.1 credits a million: 0.0000003 credits, under half a micro-credit.
    assert.equal(costOf({ input_per_million: 0.1 }, { ...NOTHING_USED, inputTokens: 3 }), 0);
    // 7 tokens: 0.0000007 credits, one micro-credit once rounded.
    assert.equal(costOf({ input_per_million: 0.1 }, { ...NOTHING_USED, inputTokens: 7 }), 1);
  });
});

describe('tokenUsageOf', () => {
  it('splits prompt_tokens into uncached, cached and cache-write input', () => {
    const tokens = tokenUsageOf({ prompt_tokens: 122, completion_tokens: 5, total_tokens: 127, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 20 } });
    assert.deepEqual(tokens, { inputTokens: 2, cachedInputTokens: 100, cacheWriteTokens: 20, outputTokens: 5 });
    assert.equal(promptTokensOf(tokens), 122);
  });

  it('reads no cache when the usage details none', () => {
    assert.deepEqual(tokenUsageOf({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }), { inputTokens: 7, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 3 });
    assert.deepEqual(tokenUsageOf({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: { cached_tokens: 0 } }), { inputTokens: 7, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 3 });
  });

  it('never counts more cached tokens than the prompt had, nor counts what is not a number', () => {
    const odd = { prompt_tokens: 10, completion_tokens: null, total_tokens: 10, prompt_tokens_details: { cached_tokens: 25, cache_write_tokens: '4' } } as unknown as Parameters<typeof tokenUsageOf>[0];
    assert.deepEqual(tokenUsageOf(odd), { inputTokens: 0, cachedInputTokens: 10, cacheWriteTokens: 0, outputTokens: 0 });
  });
});

describe('estimateInputTokens', () => {
  it('counts four characters a token over messages, input, instructions and prompt, rounding up', () => {
    assert.equal(estimateInputTokens({ messages: [{ role: 'user', content: 'abcdefgh' }, { role: 'assistant', content: 'abc' }] }), 3);
    assert.equal(estimateInputTokens({ input: 'abcd', instructions: 'abcd', prompt: 'a' }), 3);
  });

  it('reads the text parts of multi-part content and skips the others', () => {
    const body = { messages: [{ role: 'user', content: [{ type: 'text', text: 'abcdefgh' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }, null] }] };
    assert.equal(estimateInputTokens(body), 2);
  });

  it('answers 0 for a body without text', () => {
    assert.equal(estimateInputTokens({ model: 'gpt-4.1', messages: 'not a list' }), 0);
  });
});

describe('secondsOf and charactersOf', () => {
  it('reads the duration under any of its spellings, the first present winning', () => {
    assert.equal(secondsOf({ duration: 8 }), 8);
    assert.equal(secondsOf({ duration_seconds: 12 }), 12);
    assert.equal(secondsOf({ seconds: 6 }), 6);
    assert.equal(secondsOf({ duration: 5, seconds: 10 }), 5);
  });

  it('has no duration when none is a number', () => {
    assert.equal(secondsOf({ duration: '8' }), undefined);
    assert.equal(secondsOf({}), undefined);
  });

  it('counts the characters of text, else of input', () => {
    assert.equal(charactersOf({ text: 'hello world' }), 11);
    assert.equal(charactersOf({ input: 'héllo' }), 5);
    assert.equal(charactersOf({ text: 'abc', input: 'abcdef' }), 3);
    assert.equal(charactersOf({ text: 42 }), 0);
  });
});

describe('estimateOf', () => {
  it('costs nothing without prices', () => {
    assert.equal(estimateOf(undefined, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }), 0);
  });

  it('prices a chat request by its estimated input and the most output it asks for', () => {
    const pricing = { input_per_million: 1_000_000, output_per_million: 10 };
    // 12 characters: 3 input tokens at 1 credit each; max_tokens 500 at 10 a million.
    assert.equal(estimateOf(pricing, { messages: [{ role: 'user', content: 'abcdefghijkl' }], max_tokens: 500 }), 3_005_000);
    assert.equal(estimateOf(pricing, { input: 'abcd', max_output_tokens: 1000 }), 1_010_000);
    assert.equal(estimateOf(pricing, { input: 'abcd', max_completion_tokens: 100_000 }), 2_000_000);
  });

  it('prices images by n (or its spellings), one when none is named', () => {
    const pricing = { per_image: 0.5 };
    assert.equal(estimateOf(pricing, { prompt: 'a fox' }), 500_000);
    assert.equal(estimateOf(pricing, { prompt: 'a fox', n: 4 }), 2_000_000);
    assert.equal(estimateOf(pricing, { prompt: 'a fox', num_images: 3 }), 1_500_000);
    assert.equal(estimateOf(pricing, { prompt: 'a fox', batch_size: 2 }), 1_000_000);
  });

  it('prices media by the seconds named, five when a per-second price meets a request without a length', () => {
    assert.equal(estimateOf({ per_second: 0.2 }, { prompt: 'waves', duration: 10 }), 2_000_000);
    assert.equal(estimateOf({ per_second: 0.2 }, { prompt: 'waves' }), 1_000_000);
    // Without a per-second price the assumed length costs nothing.
    assert.equal(estimateOf({ per_request: 0.1 }, { prompt: 'waves' }), 100_000);
  });

  it('prices speech by the characters it reads out', () => {
    assert.equal(estimateOf({ per_1k_characters: 2 }, { input: 'x'.repeat(250) }), 500_000);
  });
});
