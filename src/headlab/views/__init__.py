"""What a viewer page shows, built from results: :class:`~headlab.views.data.ViewData` and the attention maps
captured for it (:mod:`.data`, encoded by :mod:`.codec`), and the registry of folder kinds a page is built from
(:mod:`.sources`): each kind is registered by the package whose results it reads; a model's and a scan folder's
are here (:mod:`.model`)."""
