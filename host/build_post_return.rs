//! Drops the `post-return` option from every function the component exports.
//!
//! wit-bindgen gives each export that returns a string or a list a `post-return` function,
//! which the host calls after reading the answer so that the guest can free it. This host
//! never reuses an instance: each call gets a fresh one, dropped right after, and the guest's
//! bump allocator (guest/src/bump.rs) frees nothing anyway. The functions still cost: wasmtime
//! resolves every export's `post-return` each time it instantiates the component (10 of the
//! 12 function references it builds per instance, about 8k of the ~185k instructions of a
//! webhook request; BENCHMARKS.md). wit-bindgen has no switch to leave them out, so the build
//! rewrites the component's `canon lift` entries without them. The core functions stay in the
//! module, unused; the component's types and exports are unchanged, so any host (wasmtime,
//! the JavaScript host in tests/js) runs it the same.
//!
//! Kept here rather than taken from a crate: it is one override of wasm-encoder's component
//! re-encoder, and the result is validated before it is written.

use wasm_encoder::reencode::{Error, Reencode, ReencodeComponent, component_utils};

struct WithoutPostReturn;

impl Reencode for WithoutPostReturn {
    type Error = std::convert::Infallible;
}

impl ReencodeComponent for WithoutPostReturn {
    fn parse_component_canonical(
        &mut self,
        section: &mut wasm_encoder::CanonicalFunctionSection,
        func: wasmparser::CanonicalFunction,
    ) -> Result<(), Error<Self::Error>> {
        let wasmparser::CanonicalFunction::Lift {
            core_func_index,
            type_index,
            options,
        } = func
        else {
            return component_utils::parse_component_canonical(self, section, func);
        };
        let options = options
            .iter()
            .filter(|option| !matches!(option, wasmparser::CanonicalOption::PostReturn(_)))
            .map(|option| self.canonical_option(*option))
            .collect::<Result<Vec<_>, _>>()?;
        let func = self.function_index(core_func_index)?;
        let ty = self.component_type_index(type_index);
        section.lift(func, ty, options);
        Ok(())
    }
}

/// The component without `post-return` options, validated.
pub fn without_post_return(component: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = wasm_encoder::Component::new();
    WithoutPostReturn
        .parse_component(&mut out, wasmparser::Parser::new(0), component)
        .map_err(|e| format!("re-encoding the component: {e:?}"))?;
    let out = out.finish();
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&out)
        .map_err(|e| format!("the rewritten component does not validate: {e}"))?;
    Ok(out)
}
