//! The kubelet's own pause image: a root filesystem holding one tiny static program that
//! sleeps until killed, made into a Docker image at startup (no registry needed). Its
//! container is each pod's sandbox: it holds the network and IPC namespaces the pod's
//! containers join.
//!
//! The program is written here as machine code in a minimal ELF file: `pause(2)` in a loop.
//! As PID 1 of its namespace with no signal handlers, SIGTERM does not end it; the kubelet
//! stops sandboxes with SIGKILL (the sandbox container's stop signal).

/// The image's name in the runtime.
pub const IMAGE: &str = "rkube/pause:3.10";

/// The program's path in the image.
pub const COMMAND: &str = "/pause";

/// The pause program for this machine's architecture, or None where it isn't written yet.
pub fn program() -> Option<Vec<u8>> {
    if cfg!(target_arch = "x86_64") {
        Some(x86_64())
    } else {
        None
    }
}

/// ELF64, one PT_LOAD segment at 0x400000 holding the headers and this code:
/// `mov eax, 34 (pause); syscall; jmp back`.
fn x86_64() -> Vec<u8> {
    const BASE: u64 = 0x40_0000;
    const HEADERS: u64 = 64 + 56;
    let code: [u8; 9] = [0xb8, 0x22, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf7];
    let size = HEADERS + code.len() as u64;
    let mut elf = Vec::with_capacity(size as usize);
    // e_ident: magic, 64-bit, little-endian, version 1, System V ABI.
    elf.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    elf.extend_from_slice(&[0; 8]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // e_type: executable
    elf.extend_from_slice(&0x3eu16.to_le_bytes()); // e_machine: x86-64
    elf.extend_from_slice(&1u32.to_le_bytes()); // e_version
    elf.extend_from_slice(&(BASE + HEADERS).to_le_bytes()); // e_entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    elf.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    elf.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    elf.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    elf.extend_from_slice(&1u16.to_le_bytes()); // e_phnum
    elf.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    elf.extend_from_slice(&1u32.to_le_bytes()); // p_type: PT_LOAD
    elf.extend_from_slice(&5u32.to_le_bytes()); // p_flags: read + execute
    elf.extend_from_slice(&0u64.to_le_bytes()); // p_offset
    elf.extend_from_slice(&BASE.to_le_bytes()); // p_vaddr
    elf.extend_from_slice(&BASE.to_le_bytes()); // p_paddr
    elf.extend_from_slice(&size.to_le_bytes()); // p_filesz
    elf.extend_from_slice(&size.to_le_bytes()); // p_memsz
    elf.extend_from_slice(&0x1000u64.to_le_bytes()); // p_align
    elf.extend_from_slice(&code);
    elf
}

/// A tar archive of the image's root filesystem: `/pause`, mode 0755.
pub fn rootfs_tar(program: &[u8]) -> Vec<u8> {
    let mut tar = Vec::new();
    let mut header = [0u8; 512];
    let name = b"pause";
    header[..name.len()].copy_from_slice(name);
    let octal = |field: &mut [u8], value: u64| {
        let text = format!("{:0width$o}\0", value, width = field.len() - 1);
        field.copy_from_slice(text.as_bytes());
    };
    octal(&mut header[100..108], 0o755);
    octal(&mut header[108..116], 0);
    octal(&mut header[116..124], 0);
    octal(&mut header[124..136], program.len() as u64);
    octal(&mut header[136..148], 0);
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    // The checksum is computed with its own field as spaces.
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    let text = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(text.as_bytes());
    tar.extend_from_slice(&header);
    tar.extend_from_slice(program);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    // Two empty blocks end the archive.
    tar.resize(tar.len() + 1024, 0);
    tar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_program_is_a_valid_elf_that_runs_until_killed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("rkube-pause-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pause");
        std::fs::write(&path, program().unwrap()).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut child = std::process::Command::new(&path).spawn().expect("runs");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(child.try_wait().unwrap().is_none(), "pause must keep running");
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_tar_holds_one_executable_file() {
        let tar = rootfs_tar(b"hello");
        assert_eq!(tar.len(), 512 + 512 + 1024);
        assert_eq!(&tar[..5], b"pause");
        assert_eq!(&tar[100..107], b"0000755");
        assert_eq!(&tar[512..517], b"hello");
        // The checksum field matches the header's bytes.
        let stored = u32::from_str_radix(std::str::from_utf8(&tar[148..154]).unwrap(), 8).unwrap();
        let mut header = tar[..512].to_vec();
        header[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, header.iter().map(|b| u32::from(*b)).sum::<u32>());
    }
}
