/*
 * Crash-safe file replacement. The new content goes to a temporary file in the same directory
 * (same filesystem, so rename is atomic), is fsynced, then renamed over the target, and the
 * directory is fsynced so the rename itself survives a power cut. A reader therefore sees the
 * old file or the new one, never a mix; a writer killed at any point leaves at worst a stray
 * temporary file, which the next writer removes while it holds the vault lock.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const TEMP_MARK = '.tmp-';

function getTempPath(target: string): string {
  return join(dirname(target), `.${basename(target)}${TEMP_MARK}${process.pid}-${randomBytes(6).toString('hex')}`);
}

async function writeTemp(target: string, data: string, mode: number): Promise<string> {
  const temp = getTempPath(target);
  const handle = await fs.open(temp, 'wx', mode);
  try {
    await handle.writeFile(data, 'utf8');
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  return temp;
}

export async function fsyncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch (error) {
    // Some platforms (Windows) cannot open or fsync a directory; the rename is still atomic there.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EACCES') throw error;
  } finally {
    await handle?.close();
  }
}

/** Replace `target` with `data` atomically and durably. */
export async function writeFileAtomic(target: string, data: string, mode = 0o600): Promise<void> {
  const temp = await writeTemp(target, data, mode);
  try {
    await fs.rename(temp, target);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
  await fsyncDir(dirname(target));
}

/**
 * Create `target` with `data` only if it does not exist yet, atomically (a crash never leaves a
 * half-written file under that name). Returns false when the file already existed.
 */
export async function createFileExclusive(target: string, data: string, mode = 0o600): Promise<boolean> {
  const temp = await writeTemp(target, data, mode);
  try {
    await fs.link(temp, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await fs.rm(temp, { force: true });
  }
  await fsyncDir(dirname(target));
  return true;
}

/** Remove temporary files left by writers that died. Call only while holding the lock. */
export async function removeStaleTemps(target: string): Promise<void> {
  const prefix = `.${basename(target)}${TEMP_MARK}`;
  let names: string[];
  try {
    names = await fs.readdir(dirname(target));
  } catch {
    return;
  }
  await Promise.all(
    names.filter((name) => name.startsWith(prefix)).map((name) => fs.rm(join(dirname(target), name), { force: true })),
  );
}
