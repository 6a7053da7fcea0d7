/**
 * Hues (degrees on the colour wheel) of common English colour words, so a picture drawn for
 * "a red fox" is red. Words for lightness alone (black, white, grey) name no hue and are left out.
 */
const COLOUR_HUES: Readonly<Record<string, number>> = {
  red: 0, scarlet: 5, crimson: 350, maroon: 355, rose: 340, pink: 330, magenta: 305, purple: 280,
  violet: 270, indigo: 255, navy: 228, blue: 220, azure: 205, cyan: 185, turquoise: 172, teal: 175,
  emerald: 140, green: 125, lime: 90, olive: 70, yellow: 56, gold: 48, golden: 48, amber: 40,
  orange: 28, brown: 25, copper: 22,
};

/** The hues of the colour words a prompt names, in the order it names them (each once). */
export function colourHuesOf(prompt: string): number[] {
  const hues: number[] = [];
  for (const word of prompt.toLowerCase().match(/\p{L}+/gu) ?? []) {
    const hue = COLOUR_HUES[word];
    if (hue !== undefined && !hues.includes(hue)) hues.push(hue);
  }
  return hues;
}
