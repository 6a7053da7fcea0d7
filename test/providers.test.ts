// The adapters' tests, one module each in test/providers/, run in one process: each file of its own
// would pay the loading of the whole gateway again, about 2 s of CPU on Node 20.
import './providers/anthropic.ts';
import './providers/bfl.ts';
import './providers/comfyui.ts';
import './providers/fal.ts';
import './providers/google.ts';
import './providers/hunyuan.ts';
import './providers/kling.ts';
import './providers/minimax.ts';
import './providers/openai-images.ts';
import './providers/rodin.ts';
import './providers/seedance.ts';
import './providers/seedream.ts';
import './providers/suno.ts';
import './providers/sync-models.ts';
import './providers/tripo.ts';
import './providers/volc-human.ts';
