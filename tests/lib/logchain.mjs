// tests/lib/logchain.mjs: the chain the eth_getLogs splitting tests share:
// fake providers that model one chain (same block hashes, 2 logs per block),
// some refusing a range over 1,000 blocks in a vendor's words.
import { startFake } from './harness.mjs';

export const HEAD = 30000;
export const hex = (n) => '0x' + n.toString(16);
export const ADDR = '0x2222222222222222222222222222222222222222';
export const chainArgs = ['--block', String(HEAD), '--block-time-ms', '0', '--logs-per-block', '2'];
// a fake that refuses more than 1,000 blocks as vendor words it
export const limited = (name, vendor = 'infura') =>
  startFake({ name, args: [...chainArgs, '--logs-limit', '1000', '--logs-vendor', vendor] });
// an eth_getLogs filter of ADDR over from..to (tags or hex numbers)
export const filter = (from, to) => ({ address: ADDR, fromBlock: from, toBlock: to });
