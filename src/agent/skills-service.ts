import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { SkillsRepo } from '../storage/repos/skills-repo.ts';
import type { SkillRow } from '../storage/schema.ts';

export interface SkillReference {
  name: string;
  content: string;
}

export interface SkillAsset {
  name: string;
  description: string;
  url: string;
  file_type: string;
}

/** A skill as a client writes it: stored (POST /v1/skills) or sent for one request (ephemeral_skill). */
export interface SkillInput {
  name: string;
  description: string;
  instructions: string;
  references?: SkillReference[];
  assets?: SkillAsset[];
}

/** A stored personal skill as the API shows it. */
export interface Skill extends Required<SkillInput> {
  id: string;
  object: 'skill';
  /** Unix seconds. */
  created_at: number;
}

/** `skill_options` of POST /v1/responses. */
export interface SkillOptions {
  personal_skill_ids?: string[];
  ephemeral_skill?: SkillInput;
}

function skillOf(row: SkillRow): Skill {
  return {
    id: row.id,
    object: 'skill',
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    references: JSON.parse(row.references_json) as SkillReference[],
    assets: JSON.parse(row.assets_json) as SkillAsset[],
    created_at: Math.floor(row.created_at / 1000),
  };
}

function notFound(id: string): ApiError {
  return new ApiError('skill_not_found', `no skill ${id}`, 'id');
}

/**
 * The system message that hands skills to the model: each skill's description, instructions,
 * reference texts and asset links, in the order they were selected.
 */
export function skillsPrompt(skills: readonly SkillInput[]): string {
  const sections = skills.map((skill) => {
    const lines = [`## Skill: ${skill.name}`, ...(skill.description ? [skill.description] : []), '', '### Instructions', skill.instructions];
    if (skill.references?.length) {
      lines.push('', '### References');
      for (const reference of skill.references) lines.push(`#### ${reference.name}`, reference.content);
    }
    if (skill.assets?.length) {
      lines.push('', '### Assets');
      for (const asset of skill.assets) lines.push(`- ${asset.name} (${asset.file_type}): ${asset.description} ${asset.url}`);
    }
    return lines.join('\n');
  });
  return ['Follow these skills when they apply to the request.', ...sections].join('\n\n');
}

/** Personal skills, per owner; another owner's skill is unknown (404), never forbidden. */
export class SkillsService {
  private readonly repo: SkillsRepo;

  constructor(repo: SkillsRepo) {
    this.repo = repo;
  }

  async create(ownerId: string, input: SkillInput, now = Date.now()): Promise<Skill> {
    const row: SkillRow = {
      id: newId('skill'),
      owner_id: ownerId,
      name: input.name,
      description: input.description,
      instructions: input.instructions,
      references_json: JSON.stringify(input.references ?? []),
      assets_json: JSON.stringify(input.assets ?? []),
      created_at: now,
    };
    await this.repo.insert(row);
    return skillOf(row);
  }

  async list(ownerId: string): Promise<Skill[]> {
    return (await this.repo.list(ownerId)).map(skillOf);
  }

  async get(ownerId: string, id: string): Promise<Skill> {
    const [row] = await this.repo.findMany(ownerId, [id]);
    if (!row) throw notFound(id);
    return skillOf(row);
  }

  async delete(ownerId: string, id: string): Promise<void> {
    if (!(await this.repo.delete(ownerId, id))) throw notFound(id);
  }

  /**
   * The skills one request selected: the owner's personal skills in the order named, then the
   * ephemeral skill (used once, never stored). An id the owner has no skill of is a 400.
   */
  async selected(ownerId: string, options: SkillOptions | undefined): Promise<SkillInput[]> {
    const ids = [...new Set(options?.personal_skill_ids ?? [])];
    const rows = await this.repo.findMany(ownerId, ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    const skills: SkillInput[] = ids.map((id) => {
      const row = byId.get(id);
      if (!row) throw new ApiError('invalid_parameter', `skill_options.personal_skill_ids: no skill ${id}`, 'skill_options.personal_skill_ids');
      return skillOf(row);
    });
    if (options?.ephemeral_skill) skills.push(options.ephemeral_skill);
    return skills;
  }
}
