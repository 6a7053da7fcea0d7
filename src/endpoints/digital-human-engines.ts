/** What digital-human engines and the gateway hand each other: endpoints, output roles, the create run's report. */
import type { DigitalHumanVideo } from './digital-human.ts';

/** Endpoint of POST /v1/digital-human/create. */
export const DIGITAL_HUMAN_CREATE = 'digital-human.create';
/** Endpoint of POST /v1/digital-human/generations. */
export const DIGITAL_HUMAN_GENERATIONS = 'digital-human.generations';
/** Role of the output file that is the resource's source video (kept as the owner's asset). */
export const SOURCE_VIDEO_ROLE = 'source';
/** Role of the text output that carries the new resource id. */
export const RESOURCE_ID_ROLE = 'resource_id';

/** What an engine's digital-human.create run reports in GenerationOutput.extra. */
export interface DigitalHumanCreateExtra {
  video: DigitalHumanVideo;
  /** The upstream's own id of the trained avatar, when an upstream made it. */
  upstream_resource_id?: string;
}
