/** The end of an iteration, shared by the written-out async iterators of the stream path (one object, not one per stream). */
export const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
