//! `SERVER.TOOL`: the rein name of an MCP tool, mapped when the server's name is not valid.

use rein_tool::{ToolName, ToolNameError};

use crate::ServerName;

/// The rein name for the server's tool `remote`: `SERVER.TOOL`, where every character rein
/// does not allow becomes `_` and a name too long is cut, with a short checksum of the
/// original appended so two long names stay apart. Returns the name and whether it differs
/// from `SERVER.` + `remote` (a mapping to show the operator). The mapped name is valid by
/// construction (a valid server name first, allowed characters only, at most 64 bytes); the
/// error cannot happen but is passed on rather than unwrapped.
pub(crate) fn rein_name(
    server: &ServerName,
    remote: &str,
) -> Result<(ToolName, bool), ToolNameError> {
    let direct = format!("{server}.{remote}");
    if let Ok(name) = ToolName::new(direct.as_str()) {
        return Ok((name, false));
    }
    let mut mapped: String = format!("{server}.")
        + &remote
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>();
    if mapped.len() > ToolName::MAX_LEN {
        let tag = format!("-{:08x}", fnv1a(remote.as_bytes()));
        mapped.truncate(ToolName::MAX_LEN - tag.len());
        mapped.push_str(&tag);
    }
    Ok((ToolName::new(mapped)?, true))
}

/// FNV-1a, 32 bits: a stable, dependency-free tag for a cut name (not for security).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(remote: &str, expect: &str, mapped: bool) {
        let server = ServerName::new("srv").unwrap();
        let (name, was_mapped) = rein_name(&server, remote).unwrap();
        assert_eq!(name.as_str(), expect, "{remote:?}");
        assert_eq!(was_mapped, mapped, "{remote:?}");
    }

    #[test]
    fn valid_names_are_kept_and_others_mapped() {
        check("read_file", "srv.read_file", false);
        check("get-sum", "srv.get-sum", false);
        check("say hi/now", "srv.say_hi_now", true);
        check("écrire", "srv._crire", true);
        check("", "srv.", false);
    }

    #[test]
    fn long_names_are_cut_with_a_tag_that_keeps_them_apart() {
        let a = format!("{}a", "x".repeat(80));
        let b = format!("{}b", "x".repeat(80));
        let server = ServerName::new("srv").unwrap();
        let (na, _) = rein_name(&server, &a).unwrap();
        let (nb, _) = rein_name(&server, &b).unwrap();
        assert_eq!(na.as_str().len(), ToolName::MAX_LEN);
        assert_ne!(na, nb);
    }
}
