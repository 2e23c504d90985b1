//! Element paths for error messages (`Patient.name[0].given[1]`), kept as a cheap stack while reading.

use crate::schema::{TypeId, prop_name};

/// One step below a node: element `elem` (alternative `alt`) of type `ty`, item `index` if repeating.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub(crate) ty: TypeId,
    pub(crate) elem: u16,
    pub(crate) alt: u8,
    pub(crate) index: Option<u32>,
}

/// A stack of steps below a root resource type.
#[derive(Default, Debug)]
pub(crate) struct PathStack {
    pub(crate) root: Option<TypeId>,
    pub(crate) segs: Vec<Seg>,
}

impl PathStack {
    pub(crate) fn push(&mut self, ty: TypeId, elem: u16, alt: u8, index: Option<u32>) {
        self.segs.push(Seg {
            ty,
            elem,
            alt,
            index,
        });
    }

    pub(crate) fn pop(&mut self) {
        self.segs.pop();
    }

    /// Sets the index of the innermost step (array items).
    pub(crate) fn set_index(&mut self, index: u32) {
        if let Some(s) = self.segs.last_mut() {
            s.index = Some(index);
        }
    }

    /// Renders the path, with an optional trailing property name not (yet) in the schema.
    pub(crate) fn render(&self, extra: Option<&str>) -> String {
        let mut s = self
            .root
            .map(|t| t.def().name.to_string())
            .unwrap_or_default();
        for seg in &self.segs {
            if let Some(e) = seg.ty.def().elements.get(seg.elem as usize) {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(&prop_name(e, seg.alt));
                if let Some(i) = seg.index {
                    s.push_str(&format!("[{i}]"));
                }
            }
        }
        if let Some(x) = extra {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(x);
        }
        s
    }
}
