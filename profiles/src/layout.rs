//! `shadowrep layout`: what a sample class is made of — its parents (index, wire name, type,
//! condition, notify, push, leaf handles) and the bytes an actor holds, in the kernel's pages and
//! in the UE-style reference's record.

use crate::Session;
use clap::Args;
use serde_json::json;

#[derive(Args, Clone)]
pub(crate) struct LayoutArgs {
    /// Class to describe (default: every sample class): Actor, ShooterCharacter, LootContainer,
    /// ExampleActor, Projectile, ShooterWeapon, Pickup, Counter.
    #[arg(long)]
    class: Option<String>,
}

pub(crate) fn layout(args: &LayoutArgs, json: bool, session: &mut Session) -> Result<(), String> {
    let names: Vec<&str> = match &args.class {
        Some(c) => vec![c.as_str()],
        None => shadowrep_layouts::class_names().to_vec(),
    };
    let mut classes = Vec::new();
    for name in names {
        let layout = shadowrep_layouts::layout_by_name(name).ok_or_else(|| {
            format!("unknown class `{name}` (one of {})", shadowrep_layouts::class_names().join(", "))
        })?;
        let per_actor = layout.page_bytes as f64 / shadowrep::schema::PAGE_LANES as f64;
        if json {
            let parents: Vec<_> = layout
                .parents
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    json!({
                        "index": i,
                        "name": p.name,
                        "type": format!("{:?}", p.ty),
                        "condition": format!("{:?}", p.condition),
                        "notify": format!("{:?}", p.notify),
                        "push": p.push,
                        "leaves": p.leaves.len(),
                    })
                })
                .collect();
            classes.push(json!({
                "name": layout.name,
                "base": layout.base,
                "parents": parents,
                "leaves": layout.leaves.len(),
                "handles": layout.handle_count(),
                "dynamic_arrays": layout.arrays.len(),
                "bytes_per_actor": per_actor,
                "record_bytes": layout.record_bytes,
                "checksum": format!("{:016x}", layout.checksum),
            }));
        } else {
            print!("{}", shadowrep_layouts::describe(layout));
            println!(
                "  live state: {per_actor:.1} B an actor in the kernel's pages (the UE-style reference's record: {} B), \
                 {} dynamic array(s) beside\n",
                layout.record_bytes,
                layout.arrays.len()
            );
        }
    }
    if json {
        session.emit(json!({ "command": "layout", "classes": classes }))?;
    }
    Ok(())
}
