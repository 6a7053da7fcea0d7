import { contentKey } from '../assets/asset-hash.ts';
import type { StoredOutputContent } from '../assets/asset-outputs.ts';
import type { AssetService } from '../assets/asset-service.ts';
import { NEVER_EXPIRES, type FileService, type PendingFile } from '../files/file-service.ts';
import type { GeneratedFile } from '../providers/spec.ts';
import type { EndHandler } from './task-endings.ts';
import type { GeneralOutput } from './task-record.ts';

interface StoredFile {
  file: GeneratedFile;
  served: PendingFile;
  asset: StoredOutputContent;
}

/**
 * The one place a successful task's output files are stored: each is registered as the owner's
 * output asset and served under /files (the result's URL) from the same bytes, stored once under
 * their hash. The bytes are written before the transaction that ends the task, the file and
 * asset rows in it.
 */
export class TaskOutputStore {
  private readonly deps: { files: FileService; assets: AssetService };

  constructor(deps: { files: FileService; assets: AssetService }) {
    this.deps = deps;
  }

  /**
   * The end handler of every endpoint; registered before the domains' handlers, so the result's
   * output_content lists the files (then the engine's texts) when they run.
   */
  readonly onEnd: EndHandler = async (ending) => {
    if (ending.status !== 'success' || !ending.output || ending.output.files.length === 0) return undefined;
    const expiresAt = ending.outputsExpireAt ?? NEVER_EXPIRES;
    const stored: StoredFile[] = [];
    const drop = async () => {
      for (const { asset } of stored) await this.deps.assets.outputs.dropOutput(asset);
    };
    try {
      for (const file of ending.output.files) {
        const asset = await this.deps.assets.outputs.storeOutput(file.data);
        // The /files entry shares the asset's content; its expiry leaves the bytes to the registry.
        stored.push({ file, served: this.deps.files.share(contentKey(asset.hash), asset.size), asset });
      }
    } catch (err) {
      await drop();
      throw err;
    }
    ending.result.output_content = [...stored.map(({ file, served }) => this.itemOf(file, served)), ...(ending.result.output_content ?? [])];
    const { task } = ending;
    return {
      write: async (db) => {
        for (const { file, served, asset } of stored) {
          await this.deps.files.register(task.owner_id, served, file.fileName, file.mimeType, db, { taskId: task.id, contentHash: asset.hash, expiresAt });
          await this.deps.assets.outputs.recordOutput(db, asset, { userId: task.owner_id, jobId: task.id, fileName: file.fileName, mimeType: file.mimeType });
        }
      },
      written: () => {
        for (const { asset } of stored) this.deps.assets.outputs.settleOutput(asset);
      },
      abandon: drop,
    };
  };

  private itemOf(file: GeneratedFile, served: PendingFile): GeneralOutput {
    return {
      type: file.type,
      url: this.deps.files.urlOf(served.id, file.fileName),
      filename: file.fileName,
      ...(file.mediaSize ? { mediaSize: file.mediaSize } : {}),
      ...(file.hasAudio !== undefined ? { has_audio: file.hasAudio } : {}),
      ...(file.role ? { role: file.role } : {}),
    };
  }
}
