export { FakeClock } from '../../src/testing/fake-clock.js';
