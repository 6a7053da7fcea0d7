/**
 * Static types of the capability values of spec document 3. They mirror schema.ts, which is
 * what actually checks a catalog; every field is optional there, so it is here.
 */
import type { CapabilityName } from './schema.ts';

export type NumberRange = [number, number];
/** A list, or an object whose values are lists (spec: mapOrList). */
export type MapOrList<T> = T[] | Record<string, T[]>;

export interface LanguageCapabilityFields {
  max_context_tokens?: number;
  max_input_tokens?: number;
  max_output_tokens?: number;
  max_thinking_tokens?: number;
  outputTokenLimitScope?: 'total' | 'answer_only';
  outputTokenParameter?: 'max_tokens' | 'max_completion_tokens';
  defaultOutputTokenBudget?: 'candidate_max';
  supportThinking?: boolean;
  supportThinkingModeSwitch?: boolean;
  supportStructuredOutput?: boolean;
  supportTool?: boolean;
  supportWebSearch?: boolean;
  thinkingBudgetTokensRange?: NumberRange;
  thinkingEffortLevels?: string[];
  supportedApiProtocols?: string[];
}

export interface EmbeddingCapabilityFields {
  dimensions?: number[];
}

export interface RerankCapabilityFields {
  maxDocuments?: number;
  maxRequestTokens?: number;
  maxTokensPerDocument?: number;
  supportInstruct?: boolean;
  supportTopN?: boolean;
}

export interface ImageCapabilityFields {
  allow_custom_width_height_size?: boolean;
  aspect_ratio_allowed?: string[];
  aspect_ratio_range?: NumberRange;
  input_format_allowed?: string[];
  input_max_file_size_bytes?: number;
  input_max_images_count?: number;
  input_output_max_images_count?: number;
  output_max_images_count?: number;
  output_max_size?: number;
  input_multiple_images?: boolean;
  output_multiple_images?: boolean;
  support_quality_control?: boolean;
  input_parameters?: { type: string; parameter: string }[];
  input_size_range?: string[];
  output_resolutions?: string[];
  output_size_range?: NumberRange;
  quality_options?: string[];
  size_param_format?: string;
  width_height_multiple?: number;
  width_height_range?: NumberRange;
}

export interface DraftMode {
  enabled: boolean;
  contract_version: 1 | 2;
  draft_resolution: '480p' | '720p';
  final_resolutions: ['1080p'] | ['1440p'];
  validity_seconds: number;
  input_modes: string[];
  finalization_protocol?: 'vendor_h3_media_context' | 'platform_result_reference';
}

export interface MediaConstraint {
  formats?: string[];
  codecs?: string[];
  max_size_mb?: number;
  max_total_duration_seconds?: number;
  max_count?: number;
  min_dimension?: number;
  max_dimension?: number;
  aspect_ratio_range?: NumberRange;
  duration_range?: NumberRange;
  fps_range?: NumberRange;
  requires_visual_reference?: boolean;
}

export interface ResolutionRoute {
  mode: string;
  generation_resolution: string;
  target_resolution: string;
  display_resolution: string;
  enhance_model: string;
  fallback_policy: string;
  billing_mode: string;
}

export interface VideoCapabilityFields {
  draft_mode?: DraftMode;
  aspect_ratio_allowed?: MapOrList<string>;
  output_resolutions?: MapOrList<string>;
  size_allowed?: MapOrList<string>;
  aspect_ratio_range?: NumberRange;
  input_width_height_range?: NumberRange;
  smart_multi_frame_range?: NumberRange;
  duration_options?: MapOrList<number>;
  duration_range?: NumberRange | Record<string, NumberRange>;
  input_audio?: boolean;
  input_first_frame?: boolean;
  input_first_last_frame?: boolean;
  input_last_frame?: boolean;
  input_reference_generate_multiple?: boolean;
  input_reference_generate_single?: boolean;
  input_smart_multi_frame?: boolean;
  output_audio?: boolean;
  output_bgm?: boolean;
  output_support_return_last_frame?: boolean;
  output_video_continuation?: boolean;
  support_instruction_edit?: boolean;
  support_video_effect_template?: boolean;
  supports_portrait_asset_reference?: boolean;
  supportWebSearch?: boolean;
  input_media_constraints?: {
    max_request_size_mb: number;
    image?: MediaConstraint;
    video?: MediaConstraint;
    audio?: MediaConstraint;
  };
  input_size_limit?: number;
  max_file_size_mb?: number;
  limits_with_video?: { max_images_and_elements?: number; duration_options?: number[] };
  max_audios?: number;
  max_elements?: number;
  max_images?: number;
  max_images_and_elements?: number;
  max_images_for_last_frame?: number;
  max_videos?: number;
  mode_constraints?: Record<string, { aspect_ratio_allowed?: string[]; forced_aspect_ratio?: string; prompt_required?: boolean }>;
  output_audio_mode?: string;
  smart_multi_frame_mode?: string;
  prompt_length_limit?: { max: number; count_mode?: string; label?: string };
  provider_operations?: {
    context_ir?: boolean;
    regeneration?: {
      source_resolutions: string[];
      target_resolutions: string[];
      requires_audio?: boolean;
      source_fps?: number;
    };
  };
  resolution_routes?: Record<string, ResolutionRoute>;
  support_video_effect_template_list?: string[];
  supported_modes?: string[];
}

export interface FaceLimitRange {
  min: number;
  max: number;
}

export interface MultiviewInput {
  min_images: number;
  max_images: number;
  views: { type: string; order: number; required?: boolean }[];
  file_constraints?: {
    allowed_mime_types?: string[];
    min_side?: number;
    max_side?: number;
    per_file_max_bytes?: number;
    auxiliary_total_max_bytes?: number;
  };
}

export interface Model3dCapabilityFields {
  cross_provider_edit?: { vendor3d_import_supported?: boolean };
  default_geometry_instruct_mode?: string;
  default_output_format?: string;
  /** Maximum face count per geometry quality (standard, detailed) and topology (CONTRACT §11). */
  face_limit_by_geometry_quality?: Record<string, { triangle?: number; quad?: number }>;
  face_limit_range?: FaceLimitRange;
  /** Range per topology (triangle, quad) at standard or unset geometry quality. */
  face_limit_range_by_topology?: Record<string, FaceLimitRange>;
  geometry_instruct_modes?: string[];
  geometry_quality_options?: string[];
  multiview_required_slots?: string[];
  output_formats?: string[];
  texture_quality_options?: string[];
  max_face_limit?: number;
  max_face_limit_quad?: number;
  multiview_max_images?: number;
  multiview_min_images?: number;
  multiview_input?: MultiviewInput;
  pbr_required_when_texture?: boolean;
  provider_generation_only?: boolean;
  support_export_uv?: boolean;
  support_image_autofix?: boolean;
  support_micro_detail?: boolean;
  support_part_generation?: boolean;
  support_pbr?: boolean;
  support_public_image_url_only?: boolean;
  support_quad?: boolean;
  support_smart_low_poly?: boolean;
  support_ta_pose?: boolean;
  support_texture?: boolean;
  support_texture_delight?: boolean;
}

export interface MeshEditOperation {
  supported: boolean;
  supported_formats?: string[];
  supported_texture_prompt_modes?: string[];
}

export interface MeshEditCapabilityFields {
  /** Keys are operation names: segmentation, completion, smart_lowpoly, texture, convert, ... (CONTRACT §11). */
  supported_operations?: Record<string, MeshEditOperation>;
}

export interface AudioGenerationCapabilityFields {
  output_formats?: string[];
  supports_instrumental?: boolean;
  supports_lyrics?: boolean;
  supports_lyrics_optimizer?: boolean;
  supports_prompt?: boolean;
}

export interface SpeechToTextCapabilityFields {
  endpoint_path?: string;
  input_key?: string;
  mode?: string;
  query_url?: string;
  resource_id?: string;
  submit_url?: string;
  max_duration_seconds?: number;
  max_file_size_mb?: number;
  poll_interval_ms?: number;
  poll_timeout_ms?: number;
  supported_formats?: string[];
  supports_diarization?: boolean;
  supports_emotion?: boolean;
  supports_hotwords?: boolean;
  supports_prompt_context?: boolean;
  supports_timestamp?: boolean;
}

export interface Voice {
  id: string;
  name: string;
  accent?: string;
  age?: string;
  audio?: string;
  desc?: string;
  gender?: string;
  icon?: string;
  lang?: string;
  provider?: string;
  tags?: string[];
}

export interface TtsParams {
  output_audio?: boolean;
  voice_modify?: boolean;
  emotion?: boolean;
  pronunciation_dict?: boolean;
  language_boost?: boolean;
  language_controls?: boolean;
  text_filters?: boolean;
  voice_instruction?: boolean;
  audio_formats?: string[];
  sample_rates?: number[];
  opus_sample_rates?: number[];
  bit_rates?: number[];
  volume_range?: { min: number; max: number; step: number };
}

export interface SpeechSynthesisCapabilityFields {
  tts_params?: false | TtsParams;
  voice_compatibility_group?: string;
  default_voice_id?: string;
  resource_id?: string;
  voices?: Voice[];
}

export interface AudioLimits {
  formats: string[];
  max_duration_seconds: number;
  max_size_mb: number;
  min_duration_seconds?: number;
}

export interface VoiceCloneCapabilityFields {
  preview_models?: string[];
  prompt_audio?: AudioLimits;
  source_audio?: AudioLimits;
}

export interface VectorizeCapabilityFields {
  async_task?: boolean;
  support_base64_input?: boolean;
  support_url_input?: boolean;
  supports_extra_format_download?: boolean;
  supports_preview?: boolean;
  cleanup_levels?: string[];
  input_format_allowed?: string[];
  output_format_allowed?: string[];
  max_colors_options?: number[];
}

export interface VideoEnhanceCapabilityFields {
  async_task?: boolean;
  input_video_required?: boolean;
  preserve_audio?: boolean;
  input_resolutions?: string[];
  operations?: string[];
  output_resolutions?: string[];
  max_file_size_mb?: number;
}

type Typed<K extends CapabilityName, F> = F & { type: K };

/** The value type of each capability key. */
export interface CapabilityValues {
  text_generate: Typed<'text_generate', LanguageCapabilityFields>;
  tools_call: Typed<'tools_call', LanguageCapabilityFields>;
  omni: Typed<'omni', LanguageCapabilityFields>;
  image_analysis: Typed<'image_analysis', LanguageCapabilityFields>;
  video_understanding: Typed<'video_understanding', LanguageCapabilityFields>;
  audio_understanding: Typed<'audio_understanding', LanguageCapabilityFields>;
  text_embedding: Typed<'text_embedding', EmbeddingCapabilityFields>;
  text_rerank: Typed<'text_rerank', RerankCapabilityFields>;
  image_generate: Typed<'image_generate', ImageCapabilityFields>;
  image_edit: Typed<'image_edit', ImageCapabilityFields>;
  video_generate: Typed<'video_generate', VideoCapabilityFields>;
  image_to_video: Typed<'image_to_video', VideoCapabilityFields>;
  omni_video: Typed<'omni_video', VideoCapabilityFields>;
  text_to_model: Typed<'text_to_model', Model3dCapabilityFields>;
  image_to_model: Typed<'image_to_model', Model3dCapabilityFields>;
  multiview_to_model: Typed<'multiview_to_model', Model3dCapabilityFields>;
  mesh_edit: Typed<'mesh_edit', MeshEditCapabilityFields>;
  audio_generate: Typed<'audio_generate', AudioGenerationCapabilityFields>;
  speech_to_text: Typed<'speech_to_text', SpeechToTextCapabilityFields>;
  text_to_speech: Typed<'text_to_speech', SpeechSynthesisCapabilityFields>;
  voice_clone: Typed<'voice_clone', VoiceCloneCapabilityFields>;
  image_vectorize: Typed<'image_vectorize', VectorizeCapabilityFields>;
  video_enhance: Typed<'video_enhance', VideoEnhanceCapabilityFields>;
  digital_human_generate: Typed<'digital_human_generate', object>;
}

/** A model's `capabilities` object: at least one key in a valid catalog. */
export type Capabilities = { [K in CapabilityName]?: CapabilityValues[K] };
