import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { builtinModelsPage, MODELS_PAGE } from '../scripts/docs-models.ts';

describe('docs/models.md', () => {
  it('is what `npm run docs:models` makes from the built-in catalog', () => {
    assert.equal(fs.readFileSync(MODELS_PAGE, 'utf8'), builtinModelsPage(), `${MODELS_PAGE} differs from the catalog: run npm run docs:models and commit the page`);
  });

  it('lists every catalog alias and every voice id', () => {
    const page = fs.readFileSync(MODELS_PAGE, 'utf8');
    const catalog = JSON.parse(fs.readFileSync('src/catalog/builtin-catalog.json', 'utf8')) as { baseModels: { alias: string; capabilities: { text_to_speech?: { voices?: { id: string }[] } } }[] };
    for (const model of catalog.baseModels) {
      assert.ok(page.includes(`| \`${model.alias}\` |`), model.alias);
      for (const voice of model.capabilities.text_to_speech?.voices ?? []) assert.ok(page.includes(`| \`${voice.id}\``), voice.id);
    }
  });
});
