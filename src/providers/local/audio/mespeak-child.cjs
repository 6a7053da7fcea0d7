'use strict';
// mespeak (eSpeak compiled to JavaScript) is GPL: it runs only in this child process, started by
// mespeak.ts with `process.execPath`, never inside the server. A plain CommonJS file so that the
// child needs no TypeScript loader.
//
// stdin:  JSON {voice, items: [{text, pitch, speed, amplitude, variant, wordgap}]}
// stdout: for each item, its WAV length as a 4-byte little-endian integer, then the WAV bytes
//         (16-bit mono PCM at 22050 Hz).

const { readFileSync } = require('node:fs');
const path = require('node:path');

// The engine prints notices on stdout; they go to stderr so that stdout carries only audio.
const writeStdout = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
console.log = console.info = console.warn = (...args) => process.stderr.write(`${args.join(' ')}\n`);

const meSpeak = require('mespeak');
const voicesDir = path.join(path.dirname(require.resolve('mespeak/package.json')), 'voices');

const request = JSON.parse(readFileSync(0, 'utf8'));
if (!/^[a-z]{2}(-[a-z]{2,3})?$|^en\/en(-[a-z]{1,2})?$/.test(request.voice)) throw new Error(`unknown voice ${request.voice}`);
meSpeak.loadConfig(require('mespeak/src/mespeak_config.json'));
meSpeak.loadVoice(JSON.parse(readFileSync(path.join(voicesDir, `${request.voice}.json`), 'utf8')));

for (const item of request.items) {
  const wav = meSpeak.speak(item.text, {
    rawdata: 'array',
    voice: request.voice,
    variant: item.variant,
    pitch: item.pitch,
    speed: item.speed,
    amplitude: item.amplitude,
    wordgap: item.wordgap ?? 0,
  });
  if (!wav) throw new Error('mespeak produced no audio');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(wav.length);
  writeStdout(length);
  writeStdout(Buffer.from(wav));
}
