/**
 * @license
 * Copyright 2025 Google LLC
 * SPDX-License-Identifier: Apache-2.0
 */
import {GoogleGenAI} from '@google/genai';
import {MODEL_FLASH_LITE} from './constants.js';

const GEMINI_API_KEY = process.env.GEMINI_API_KEY || process.env.GOOGLE_API_KEY;
const GOOGLE_GENAI_USE_VERTEXAI = process.env.GOOGLE_GENAI_USE_VERTEXAI;

async function createInteractionsFromMLDev() {
  const ai = new GoogleGenAI({
    apiKey: GEMINI_API_KEY,
  });
  const response = await ai.interactions.create({
    model: MODEL_FLASH_LITE,
    input:
      'Schedule a meeting for 10/06/2028 at 10 am with Peter and Amir about the Next Gen API',
    tools: [
      {
        name: 'schedule_meeting',
        description:
          'Schedules a meeting with specified attendees at a given time and date.',
        parameters: {
          type: 'object',
          properties: {
            attendees: {
              type: 'array',
              items: {type: 'string'},
              description: 'List of people attending the meeting.',
            },
            date: {
              type: 'string',
              description: 'Date of the meeting (e.g., 2024-07-29)',
            },
            time: {
              type: 'string',
              description: 'Time of the meeting (e.g., 15:00)',
            },
            topic: {
              type: 'string',
              description: 'The subject or topic of the meeting.',
            },
          },
          required: ['attendees', 'date', 'time', 'topic'],
        },
        type: 'function',
      },
    ],
  });

  console.debug(response);
}

async function main() {
  if (GOOGLE_GENAI_USE_VERTEXAI) {
    console.log('Interactions API is not yet supported on Vertex');
  } else {
    await createInteractionsFromMLDev();
  }
}

main();
