/**
 * Which source frame each output frame shows: `count` frames from `start`, looping over the
 * `available` frames forwards, or forwards then backwards (ping-pong, no frame shown twice in
 * a row at the turns).
 */
export function frameOrder(opts: { available: number; start: number; count: number; pingPong: boolean }): number[] {
  const { available, start, count, pingPong } = opts;
  const period = pingPong && available > 1 ? 2 * (available - 1) : available;
  return Array.from({ length: count }, (_, i) => {
    const position = (start + i) % period;
    return position < available ? position : period - position;
  });
}
