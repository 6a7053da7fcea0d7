import { useState } from 'react';
import { api } from '../api.ts';
import { useGet } from '../hooks.ts';
import { FieldError, numberOrUndefined, useFieldErrors } from '../forms.tsx';

const PRICES = ['per_request', 'per_image', 'per_second', 'input_per_million', 'output_per_million', 'per_1k_characters'] as const;

interface AdminModel { alias: string; providerCode: string; enabled: boolean; disabled_reason?: string; pricing: Record<string, number> | null; fallbacks: string[]; source: string }

function ModelRow({ model, aliases, reload }: { model: AdminModel; aliases: Set<string>; reload: () => void }) {
  const [editing, setEditing] = useState(false);
  const [prices, setPrices] = useState<Record<string, string>>({});
  const [fallbacks, setFallbacks] = useState('');
  const errors = useFieldErrors();
  const open = () => {
    setPrices(Object.fromEntries(PRICES.map((k) => [k, model.pricing?.[k]?.toString() ?? ''])));
    setFallbacks(model.fallbacks.join(', '));
    errors.clear();
    setEditing(!editing);
  };
  const toggle = async () => {
    await api(`/admin/models/${encodeURIComponent(model.alias)}`, { method: 'PATCH', json: { enabled: !model.enabled } });
    reload();
  };
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    const pricing: Record<string, number> = {};
    const found: Record<string, string | undefined> = {};
    for (const k of PRICES) {
      const n = numberOrUndefined(prices[k] ?? '');
      if (n === undefined) continue;
      if (!(n >= 0)) found.pricing = `${k}: a number ≥ 0`;
      pricing[k] = n;
    }
    const list = fallbacks.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = list.find((a) => !aliases.has(a) || a === model.alias);
    if (unknown) found.fallbacks = `${unknown}: not another model's alias`;
    if (!errors.check(found)) return;
    try {
      await api(`/admin/models/${encodeURIComponent(model.alias)}`, { method: 'PATCH', json: { pricing, fallbacks: list } });
      setEditing(false);
      reload();
    } catch (err) {
      errors.fail(err);
    }
  };
  return (
    <>
      <tr data-model={model.alias}>
        <td>{model.alias} <span className="source">{model.source}</span></td>
        <td>{model.providerCode}</td>
        <td>{model.enabled ? 'yes' : `no${model.disabled_reason ? ` (${model.disabled_reason})` : ''}`}</td>
        <td className="small" data-testid="pricing">{model.pricing ? Object.entries(model.pricing).map(([k, v]) => `${k}=${v}`).join(', ') : '—'}</td>
        <td className="small">{model.fallbacks.join(', ') || '—'}</td>
        <td><button onClick={toggle}>{model.enabled ? 'Disable' : 'Enable'}</button> <button onClick={open}>Prices & fallbacks</button></td>
      </tr>
      {editing && (
        <tr><td colSpan={6}>
          <form className="grid" onSubmit={save} data-testid="edit-model">
            {PRICES.map((k) => <label key={k}>{k}<input name={k} value={prices[k] ?? ''} onChange={(e) => setPrices({ ...prices, [k]: e.target.value })} /></label>)}
            <FieldError errors={errors.errors} field="pricing" />
            <label>Fallbacks (aliases, in order)<input name="fallbacks" value={fallbacks} onChange={(e) => setFallbacks(e.target.value)} /><FieldError errors={errors.errors} field="fallbacks" /></label>
            <div><button type="submit">Save model</button></div>
            <FieldError errors={errors.errors} field="form" />
          </form>
        </td></tr>
      )}
    </>
  );
}

/** Every model with its state, prices and fallbacks, changed through /admin/models. */
export function ModelSettings() {
  const models = useGet<{ data: AdminModel[] }>('/admin/models');
  const [filter, setFilter] = useState('');
  const aliases = new Set(models.data?.data.map((m) => m.alias));
  return (
    <section>
      <h2>Model settings</h2>
      <div className="filters"><input placeholder="filter by alias or provider" value={filter} onChange={(e) => setFilter(e.target.value)} /></div>
      {models.error && <p className="error">{models.error}</p>}
      <table data-testid="model-settings">
        <thead><tr><th>Model</th><th>Provider</th><th>Enabled</th><th>Prices (credits)</th><th>Fallbacks</th><th></th></tr></thead>
        <tbody>
          {models.data?.data.filter((m) => !filter || m.alias.includes(filter) || m.providerCode.includes(filter)).map((m) => <ModelRow key={m.alias} model={m} aliases={aliases} reload={models.reload} />)}
        </tbody>
      </table>
    </section>
  );
}
