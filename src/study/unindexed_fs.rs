//! A filesystem on which one directory is O(n): an ext4 image made with `-O ^dir_index`
//! (no hashed directory index, so every lookup and insert reads the directory's blocks in
//! turn), loop-mounted inside the study's folder for the session-stores study's control
//! columns. Mounting needs root; the mount is undone when the guard drops (after the
//! columns, after a failure, after Ctrl-C, which lets the study finish), and by
//! `loadrig cleanup --target fs://DIR/unindexed-fs` after a kill, which finds the marker
//! file this module writes at the filesystem's root.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The mount point's name inside the study's folder; the image is this name plus `.img`.
pub const MOUNT_DIR: &str = "unindexed-fs";
/// The file at the root of every filesystem this module mounted: cleanup unmounts only
/// a mount point that holds it.
pub const MARKER: &str = "loadrig-unindexed-fs";

/// A mounted image; unmounted (and its image removed) on drop.
pub struct Mounted {
    pub root: PathBuf,
    image: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Err(e) = unmount(&self.root, &self.image) {
            eprintln!(
                "loadrig: {e}; `loadrig cleanup --target fs://{}` retries",
                self.root.display()
            );
        }
    }
}

/// Make and mount an image under `dir` big enough for two stores of `records` files each.
/// Err: why it cannot (in the words of a "not run" row).
pub fn mount(dir: &Path, records: u64) -> Result<Mounted, String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root to mount, or --fs-root".into());
    }
    let root = dir.join(MOUNT_DIR);
    let image = dir.join(format!("{MOUNT_DIR}.img"));
    if is_mount_point(&root) {
        // A mount a killed study left: take it down and start afresh.
        unmount(&root, &image)?;
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    // Two stores of `records` files of one 4 KiB block each, their folders, and room to
    // spare; the file is sparse, so only what is written takes space.
    let bytes = (64 << 20) + records * 2 * 8192;
    let inodes = records * 2 + 4096;
    let file = std::fs::File::create(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    file.set_len(bytes)
        .map_err(|e| format!("{}: {e}", image.display()))?;
    drop(file);
    let made = run(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-O", "^dir_index", "-E", "nodiscard", "-N"])
        .arg(inodes.to_string())
        .arg(&image));
    let mounted = made.and_then(|()| {
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&root))
    });
    if let Err(e) = mounted {
        let _ = std::fs::remove_file(&image);
        let _ = std::fs::remove_dir(&root);
        return Err(e);
    }
    let guard = Mounted { root, image };
    std::fs::write(
        guard.root.join(MARKER),
        b"mounted by loadrig study session-stores\n",
    )
    .map_err(|e| format!("{}: {e}", guard.root.display()))?;
    Ok(guard)
}

/// `loadrig cleanup` on an fs:// target: when `root` is a mount point this module made
/// (it holds the marker), unmount it and remove its image. Returns whether it did.
pub fn release(root: &Path) -> anyhow::Result<bool> {
    if !is_mount_point(root) || !root.join(MARKER).is_file() {
        return Ok(false);
    }
    let image = root.with_file_name(format!(
        "{}.img",
        root.file_name().unwrap_or_default().to_string_lossy()
    ));
    unmount(root, &image).map_err(anyhow::Error::msg)?;
    Ok(true)
}

fn unmount(root: &Path, image: &Path) -> Result<(), String> {
    if is_mount_point(root) {
        run(Command::new("umount").arg(root))?;
    }
    let _ = std::fs::remove_file(image);
    let _ = std::fs::remove_dir(root);
    Ok(())
}

/// Whether `path` is on another device than its parent (a mount point).
fn is_mount_point(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), std::fs::metadata(path.join(".."))) {
        (Ok(p), Ok(up)) => p.dev() != up.dev(),
        _ => false,
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let name = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| format!("{name}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
