/**
 * @license
 * Copyright 2025 Google LLC
 * SPDX-License-Identifier: Apache-2.0
 */

/**
 * The name of the generative model to be used in the examples.
 */
export const GEMINI_MODEL_NAME = 'gemini-3.5-flash';

/**
 * The name of the gemini 2.5 flash model to be used in some examples.
 */
export const GEMINI_2_5_FLASH = 'gemini-2.5-flash';

/**
 * The name of the gemini 2.5 flash lite model to be used in some examples.
 */
export const GEMINI_2_5_FLASH_LITE = 'gemini-2.5-flash-lite';

/**
 * The name of the live model to be used in the examples.
 */
export const GEMINI_LIVE_MODEL_NAME = 'gemini-live-2.5-flash';

/**
 * The name of the preview live model to be used in the examples.
 */
export const GEMINI_LIVE_MODEL_NAME_PREVIEW = 'gemini-3.1-flash-live-preview';

/**
 * The name of the image generation model to be used in the examples.
 */
export const GEMINI_IMAGE_GENERATION_MODEL_NAME = 'gemini-3.1-flash-image';

/**
 * The name of the Imagen generate model to be used in the examples.
 */
export const IMAGEN_GENERATE_MODEL_NAME = 'imagen-4.0-generate-001';

/**
 * The name of the Imagen model to be used for image editing in the examples.
 */
export const IMAGEN_CAPABILITY_MODEL_NAME = 'imagen-3.0-capability-001';

/**
 * The name of the Imagen ingredients model to be used in the examples.
 */
export const IMAGEN_INGREDIENTS_MODEL_NAME = 'imagen-4.0-ingredients-preview';

/**
 * The name of the Virtual try-on model to be used in the examples.
 */
export const VIRTUAL_TRY_ON_MODEL_NAME = 'virtual-try-on-001';

/**
 * The name of the segment image model to be used in the examples.
 */
export const SEGMENT_IMAGE_MODEL_NAME = 'image-segmentation-001';

/**
 * The name of the Veo model to be used in the examples.
 */
export const VEO_MODEL_NAME = 'veo-3.1-generate-preview';

/**
 * The name of the embedding model to be used in the examples.
 */
export const EMBEDDING_MODEL_NAME = 'gemini-embedding-2';

/**
 * The file path to be used in the files operations examples.
 */
export const UPLOAD_FILE_PATH = './resources/test.txt';

/** Convenience aliases for sample scripts. */
export const MODEL_FLASH = GEMINI_2_5_FLASH;
export const MODEL_FLASH_LITE = GEMINI_2_5_FLASH_LITE;
export const MODEL_PRO = 'gemini-3.1-pro-preview';
export const MODEL_LIVE = GEMINI_LIVE_MODEL_NAME;
export const MODEL_EMBEDDING = EMBEDDING_MODEL_NAME;
export const MODEL_IMAGEN = IMAGEN_GENERATE_MODEL_NAME;
export const MODEL_VEO = VEO_MODEL_NAME;
