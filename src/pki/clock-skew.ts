/**
 * How far every certificate we issue is back-dated, so a peer whose clock is a little slow
 * accepts it at once. Readers subtract it again to know when a certificate was really issued.
 */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;
